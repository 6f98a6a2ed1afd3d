"""Execute the book's stale pages a few at a time, into jupyter-book's execution cache.

jupyter-book (myst-nb's ``cache`` mode) executes each stale page in turn while
Sphinx reads it: one kernel at a time, and most pages keep one core busy (their
TensorFlow subprocesses import and run single-threaded), so a 2-core machine idles
half the time.  :func:`execute_ahead` executes the stale pages first, ``jobs`` at a
time, longest first, exactly as myst-nb would (the same reader, the same
``execute`` settings from ``_config.yml``, the page's folder as the working
folder), and stores each one that succeeds in the same cache.  The build that
follows finds them cached and only renders them.

A page that fails here is not stored: the build executes it again itself and
reports its failing cell the usual way (``book/build_book.py`` names it).  With
``jobs=1`` nothing is executed ahead and the build runs exactly as before: each
page alone on the machine (use it when the figures are the point, not the build
time).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import yaml

DEFAULT_JOBS = 2  # two kernels on a 2-core machine: each page keeps about one core busy


@dataclasses.dataclass
class Ran:
    """One page executed ahead."""

    page: str
    seconds: float
    error: str | None = None  # the error's last line when the page failed (not cached)


def jobs_from_env(default: int = DEFAULT_JOBS) -> int:
    """``BOOK_JOBS`` (a whole number >= 1), or ``default`` capped at this machine's cores."""
    raw = os.environ.get("BOOK_JOBS", "").strip()
    if not raw:
        return max(1, min(default, os.cpu_count() or 1))
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"BOOK_JOBS must be a whole number of at least 1, not {raw!r}")
    return int(raw)


def book_pages(root: Path) -> list[Path]:
    """The pages ``_toc.yml`` lists (root first), as files under ``root``."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8")) or {}
    names = [toc.get("root")] if toc.get("root") else []

    def walk(entries) -> None:
        for entry in entries or []:
            if isinstance(entry, dict):
                if entry.get("file"):
                    names.append(entry["file"])
                walk(entry.get("chapters") or entry.get("sections"))

    walk(toc.get("chapters"))
    for part in toc.get("parts") or []:
        walk(part.get("chapters"))
    pages = []
    for name in names:
        for suffix in ("", ".md", ".ipynb"):
            path = root / f"{name}{suffix}"
            if path.is_file():
                pages.append(path)
                break
    return pages


def _settings(root: Path) -> dict:
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")) or {}
    execute = config.get("execute") or {}
    return {"mode": execute.get("execute_notebooks", "auto"),
            "timeout": execute.get("timeout", 30),
            "allow_errors": bool(execute.get("allow_errors", False)),
            "in_temp": bool(execute.get("run_in_temp", False)),
            "extensions": (config.get("parse") or {}).get("myst_enable_extensions") or []}


def _read(path: Path, extensions: list[str]):
    """The page as myst-nb reads it (None when it is not a notebook)."""
    import nbformat
    from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        return nbformat.reads(text, as_version=4)
    if not is_myst_markdown_notebook(text):
        return None
    config = MdParserConfig(enable_extensions=set(extensions))
    return read_myst_markdown_notebook(text, config=config, add_source_map=True, path=str(path))


def stale_pages(root: Path, cache_dir: Path) -> list[tuple[Path, object, float]]:
    """(page, notebook, expected seconds) for each notebook page the cache does not hold,
    the longest expected first (the last time it ran, else 60 s)."""
    from jupyter_cache import get_cache

    settings = _settings(root)
    cache = get_cache(str(cache_dir))
    last = {}
    for record in cache.list_cache_records():
        last[record.uri] = float((record.data or {}).get("execution_seconds") or 0.0)
    stale = []
    for page in book_pages(root):
        notebook = _read(page, settings["extensions"])
        if notebook is None or not any(c.cell_type == "code" for c in notebook.cells):
            continue
        try:
            cache.match_cache_notebook(notebook)
            continue
        except KeyError:
            pass
        stale.append((page, notebook, last.get(str(page), 60.0)))
    stale.sort(key=lambda item: -item[2])
    return stale


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # colours in kernel tracebacks and jupyter-book's log


def _last_line(text: str) -> str:
    lines = [line.strip() for line in ANSI.sub("", text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else "failed"


def execute_ahead(root: Path, cache_dir: Path, jobs: int, log=print) -> list[Ran]:
    """Execute every stale page ``jobs`` at a time and cache those that succeed; what ran."""
    settings = _settings(root)
    if jobs < 2 or settings["mode"] != "cache":
        return []
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from jupyter_cache.executors.utils import single_nb_execution

    # The start page (the root) prints the chapters' run times from this cache: it is left to
    # the build, which reads pages in sorted order, so it runs after every chapter ran.
    start = book_pages(root)[:1]
    stale = [item for item in stale_pages(root, cache_dir) if item[0] not in start]
    if len(stale) < 2:
        return []  # one page: the build runs it just as fast
    cache, ran = get_cache(str(cache_dir)), []
    log(f"executing {len(stale)} stale page(s) {jobs} at a time before the build")

    def run(item):
        page, notebook, _ = item
        with _working_folder(page, settings["in_temp"]) as cwd:
            # A kernel gets as long to start as a cell to run: on a loaded machine (the test
            # suite builds the book on idle CPU) 60 s can pass before it answers.
            result = single_nb_execution(notebook, cwd=cwd, timeout=settings["timeout"],
                                         startup_timeout=settings["timeout"],
                                         allow_errors=settings["allow_errors"], meta_override=True)
        return page, notebook, result

    with ThreadPoolExecutor(jobs) as pool:  # kernels are processes: threads only wait on them
        for done in as_completed([pool.submit(run, item) for item in stale]):
            page, notebook, result = done.result()
            shown = page.relative_to(root) if page.is_relative_to(root) else page
            if result.err is None:  # the cache is written from this thread only
                cache.cache_notebook_bundle(CacheBundleIn(notebook, str(page), data={"execution_seconds": result.time}),
                                            check_validity=False, overwrite=True)
                log(f"  {shown}: executed in {result.time:.0f} s")
            else:
                log(f"  {shown}: FAILED after {result.time:.0f} s; the build runs it again and names the cell")
            ran.append(Ran(str(shown), result.time,
                           None if result.err is None else _last_line(result.exc_string or str(result.err))))
    return ran


@contextlib.contextmanager
def _working_folder(page: Path, in_temp: bool):
    """myst-nb's working folder for a page: the page's own folder, or a temporary one."""
    if not in_temp:
        yield str(page.parent)
        return
    with tempfile.TemporaryDirectory() as folder:
        yield folder
