"""book/execute_ahead.py: stale pages run at once, into the cache the build then reads.

A tiny book of three pages is built the way ``make book`` builds the real one.  Two of
its pages can only finish when both run at the same time (each waits for the other's
mark), so a build that executed them one after another would fail them; the third
fails outright and must not be cached.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from tests.book.conftest import load_book_script
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

execute_ahead = load_book_script("execute_ahead")

PAGE = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# {title}

```{{code-cell}} ipython3
{code}
```
"""
WAIT_FOR = """import pathlib, time
pathlib.Path({mine!r}).touch()
for _ in range(600):  # 60 s at most
    if pathlib.Path({other!r}).exists():
        break
    time.sleep(0.1)
else:
    raise RuntimeError("the other page never ran beside this one")
print("ran beside {other_page}")"""


def _tiny_book(root, *, failing: bool) -> None:
    (root / "_config.yml").write_text(textwrap.dedent("""\
        title: tiny
        execute:
          execute_notebooks: cache
          timeout: 120
          allow_errors: false
          run_in_temp: false
        """))
    chapters = ["a", "b"] + (["c"] if failing else [])
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n"
                                   + "".join(f"  - file: {name}\n" for name in chapters))
    (root / "intro.md").write_text("# Intro\n\nNo code here.\n")
    marks = {name: str(root / f"{name}.mark") for name in "ab"}
    (root / "a.md").write_text(PAGE.format(title="A", code=WAIT_FOR.format(mine=marks["a"], other=marks["b"],
                                                                           other_page="b")))
    (root / "b.md").write_text(PAGE.format(title="B", code=WAIT_FOR.format(mine=marks["b"], other=marks["a"],
                                                                           other_page="a")))
    if failing:
        (root / "c.md").write_text(PAGE.format(title="C", code='raise ValueError("planted in c")'))


def test_pages_are_found_in_the_order_of_the_toc():
    pages = [p.relative_to(ROOT).as_posix() for p in execute_ahead.book_pages(ROOT)]
    assert pages[0] == "book/intro.md" and pages[1:11] == sorted(pages[1:11])
    assert "book/05_tf_data.md" in pages and "book/hardware.md" in pages


def test_stale_pages_run_side_by_side_and_a_failure_is_not_cached(tmp_path):
    _tiny_book(tmp_path, failing=True)
    cache = tmp_path / "_build" / ".jupyter_cache"
    assert [p.name for p, _, _ in execute_ahead.stale_pages(tmp_path, cache)] == ["a.md", "b.md", "c.md"]
    ran = {r.page: r for r in execute_ahead.execute_ahead(tmp_path, cache, jobs=2, log=lambda line: None)}
    assert ran["a.md"].error is None and ran["b.md"].error is None, ran
    assert "ValueError: planted in c" in ran["c.md"].error
    assert [p.name for p, _, _ in execute_ahead.stale_pages(tmp_path, cache)] == ["c.md"]


def test_the_start_page_is_left_to_the_build(tmp_path):
    """The root page reads the chapters' run times from the cache: it is not executed ahead,
    beside them, but by the build, after them."""
    _tiny_book(tmp_path, failing=False)
    (tmp_path / "intro.md").write_text(PAGE.format(title="Intro", code="print('start page')"))
    cache = tmp_path / "_build" / ".jupyter_cache"
    assert [p.name for p, _, _ in execute_ahead.stale_pages(tmp_path, cache)] == ["intro.md", "a.md", "b.md"]
    ran = execute_ahead.execute_ahead(tmp_path, cache, jobs=2, log=lambda line: None)
    assert sorted(r.page for r in ran) == ["a.md", "b.md"], ran
    assert [p.name for p, _, _ in execute_ahead.stale_pages(tmp_path, cache)] == ["intro.md"]


def test_one_job_executes_nothing_ahead(tmp_path):
    _tiny_book(tmp_path, failing=False)
    cache = tmp_path / "_build" / ".jupyter_cache"
    assert execute_ahead.execute_ahead(tmp_path, cache, jobs=1) == []
    assert len(execute_ahead.stale_pages(tmp_path, cache)) == 2


def test_the_build_renders_pages_executed_ahead_without_executing_them(tmp_path):
    """What ``make book`` runs: the two pages that need each other pass only because they ran ahead."""
    _tiny_book(tmp_path, failing=False)
    proc = subprocess.run([sys.executable, str(ROOT / "book" / "build_book.py"), "build", str(tmp_path),
                           "--builder", "html", "-W", "-n", "--keep-going"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, env={**_env(), "BOOK_JOBS": "2"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "2 page(s) executed ahead" in proc.stdout and "the build itself executed 0" in proc.stdout, proc.stdout
    html = (tmp_path / "_build" / "html" / "a.html").read_text()
    assert "ran beside b" in html


def test_with_one_job_the_build_executes_the_page_itself(tmp_path):
    _tiny_book(tmp_path, failing=False)
    for name in ("a.md", "b.md"):
        (tmp_path / name).unlink()
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: c\n")
    (tmp_path / "c.md").write_text(PAGE.format(title="C", code='print("c ran")'))
    proc = subprocess.run([sys.executable, str(ROOT / "book" / "build_book.py"), "build", str(tmp_path),
                           "--builder", "html", "-W", "-n", "--keep-going"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, env={**_env(), "BOOK_JOBS": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "0 page(s) executed ahead" in proc.stdout and "the build itself executed 1" in proc.stdout, proc.stdout


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_book_jobs_is_one_line_that_says_what_to_set(tmp_path, value):
    _tiny_book(tmp_path, failing=False)
    proc = subprocess.run([sys.executable, str(ROOT / "book" / "build_book.py"), "build", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**_env(), "BOOK_JOBS": value})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"build_book: BOOK_JOBS must be a whole number of at least 1, not {value!r}"


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k != "BOOK_JOBS"}


NOISY = 'import os\nos.write(2, b"E0000 cuda_platform.cc:52] failed call to cuInit: planted noise from {page}\\n")'


def test_the_terminal_shows_progress_and_the_failing_cell_while_kernel_noise_goes_to_the_log(tmp_path):
    """``make book``'s output: the kernels' stderr (TensorFlow's start-up lines, here planted ones) from
    pages executed ahead (d) and by the build (c, which fails) is in _build/book_build.log, not on the
    terminal, which still names c's failing cell and its error."""
    _tiny_book(tmp_path, failing=True)
    (tmp_path / "c.md").write_text(PAGE.format(title="C", code=NOISY.format(page="c") + '\nraise ValueError("planted in c")'))
    (tmp_path / "d.md").write_text(PAGE.format(title="D", code=NOISY.format(page="d") + '\nprint("d ran")'))
    (tmp_path / "_toc.yml").write_text((tmp_path / "_toc.yml").read_text() + "  - file: d\n")
    proc = subprocess.run([sys.executable, str(ROOT / "book" / "build_book.py"), "build", str(tmp_path),
                           "--builder", "html", "-W", "-n", "--keep-going"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, env={**_env(), "BOOK_JOBS": "2"})
    terminal = proc.stdout + proc.stderr
    assert proc.returncode != 0, terminal[-3000:]
    assert "planted noise" not in terminal and "[IPKernelApp]" not in terminal and "Running Sphinx" not in terminal, \
        terminal[-3000:]
    log = (tmp_path / "_build" / "book_build.log").read_text()
    assert "planted noise from d" in log and "planted noise from c" in log, log[-3000:]
    assert "  d.md: executed in" in proc.stdout and "reading sources... [" in proc.stdout, proc.stdout
    c_source = (tmp_path / "c.md").read_text().splitlines()
    failure = re.search(r"^  c\.md: code cell 1 \(line (\d+)\) failed: ValueError: planted in c$", proc.stderr, re.M)
    assert failure and c_source[int(failure[1]) - 1] == "import os", proc.stderr
    assert "full log (jupyter-book and the kernels): _build/book_build.log" in proc.stderr, proc.stderr
