"""book/build_book.py: a failed book build names the chapter, the cell and the error."""
from __future__ import annotations

import subprocess

from tests.book.conftest import load_book_script

build_book = load_book_script("build_book")

CHAPTER = """---
jupytext:
  text_representation:
    format_name: myst
---

# A chapter

```{code-cell} ipython3
:tags: [hide-output]

x = 1
```

Some prose.

```{code-cell} ipython3
print("second")
raise ValueError("planted")
```
"""


def jupyter_book_log(path) -> str:
    """The shape of jupyter-book 1.0's output when a cell fails (colours stripped)."""
    return f"""reading sources... [ 50%] book/ch
{path}: WARNING: Executing notebook failed: CellExecutionError
Traceback (most recent call last):
  File ".../nbclient/client.py", line 918, in _check_raise_for_error
    raise CellExecutionError.from_cell_and_msg(cell, exec_reply_content)
nbclient.exceptions.CellExecutionError: An error occurred while executing the following cell:
------------------
print("second")
raise ValueError("planted")
------------------

----- stdout -----
second
------------------

---------------------------------------------------------------------------
ValueError                                Traceback (most recent call last)
Cell In[2], line 2
----> 2 raise ValueError("planted")

ValueError: planted

WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
{path}: WARNING: Notebook exception traceback saved in: _build/html/reports/book/ch.err.log [mystnb.exec]
/x/book/intro.md:3: WARNING: unknown document: 'nowhere'
"""


def test_a_failing_cell_is_named_with_its_number_line_and_error(tmp_path):
    chapter = tmp_path / "ch.md"
    chapter.write_text(CHAPTER)
    [failure] = build_book.failures(jupyter_book_log(chapter))
    assert failure.cell == 2 and failure.error == "ValueError: planted"
    assert CHAPTER.splitlines()[failure.line - 1] == 'print("second")'
    assert failure.describe().endswith(f"code cell 2 (line {failure.line}) failed: ValueError: planted")


def test_sphinx_warnings_are_listed_without_kernel_noise(tmp_path):
    warnings = build_book.other_warnings(jupyter_book_log(tmp_path / "ch.md"))
    assert len(warnings) == 2 and warnings[-1] == "/x/book/intro.md:3: WARNING: unknown document: 'nowhere'"
    assert not any("absl" in w for w in warnings)


def test_a_cell_that_is_not_in_the_file_is_still_reported(tmp_path):
    chapter = tmp_path / "ch.md"
    chapter.write_text(CHAPTER.replace('raise ValueError("planted")', "pass"))
    [failure] = build_book.failures(jupyter_book_log(chapter))
    assert failure.cell is None and failure.describe().endswith("a code cell failed: ValueError: planted")


KERNEL_NOISE = [
    "[IPKernelApp] WARNING | Kernel is running over TCP without encryption.",
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1796687529.034094   18831 cudart_stub.cc:31] Could not find cuda drivers on your machine, "
    "GPU will not be used.",
    "E0000 00:00:1796687542.998871   18831 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error",
    "Running Sphinx v7.4.7",
    "Using jupyter-cache at: /x/_build/.jupyter_cache",
]


def test_the_terminal_gets_progress_and_warnings_not_kernel_noise(tmp_path):
    progress = ["reading sources... [ 60%] book/03_mixed_precision",
                "/x/book/c.md: Executing notebook using local CWD [mystnb]",
                "build finished with problems, 2 warnings."]
    warning = "/x/book/intro.md:3: WARNING: unknown document: 'nowhere'"
    assert [line for line in KERNEL_NOISE + progress + [warning] if build_book.shown(line)] == progress + [warning]


def test_kernel_output_goes_to_the_log_and_progress_to_the_terminal(tmp_path, capfd):
    """What the kernels executed ahead inherit: fds 1 and 2 point at the log."""
    log = tmp_path / "book_build.log"
    with log.open("w") as handle, build_book.output_into(handle) as terminal:
        subprocess.run(["sh", "-c", "echo 'E0000 failed call to cuInit' >&2; echo kernel stdout"], check=True)
        terminal("  a.md: executed in 3 s")
    out, err = capfd.readouterr()
    assert out == "  a.md: executed in 3 s\n" and err == ""
    assert log.read_text().splitlines() == ["E0000 failed call to cuInit", "kernel stdout"]
    print("stdout is back")
    assert capfd.readouterr().out == "stdout is back\n"


def test_a_traceback_saved_in_a_report_still_names_the_cell(tmp_path):
    """jupyter-book 1.0.4 logs only where myst-nb saved the traceback; the report is read."""
    chapter = tmp_path / "ch.md"
    chapter.write_text(CHAPTER)
    report = tmp_path / "reports" / "ch.err.log"
    report.parent.mkdir()
    report.write_text(jupyter_book_log(chapter).split("nbclient.exceptions.", 1)[1]
                      .replace("ValueError: planted", "\x1b[31mValueError\x1b[39m: planted"))
    log = (f"reading sources... [ 50%] ch\n{chapter}: WARNING: Executing notebook failed: CellExecutionError [mystnb.exec]\n"
           f"{chapter}: WARNING: Notebook exception traceback saved in: {report} [mystnb.exec]\n")
    [failure] = build_book.failures(log)
    assert failure.cell == 2 and failure.error == "ValueError: planted"
    assert build_book.other_warnings(log) == [log.splitlines()[2].strip()]
