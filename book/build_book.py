"""``make book``: run jupyter-book quietly and, when it fails, name the chapter and cell.

jupyter-book reports a failing cell inside two nested tracebacks (or in a file
under ``_build/html/reports/``) and ends with "Look above for the cause", and
every kernel it starts writes its own and TensorFlow's start-up lines (CUDA
stubs, ``failed call to cuInit``, oneDNN notes) to the terminal.  For a
``build`` this wrapper writes all of that to :data:`LOG_NAME` under
``_build/`` and prints only progress lines (each page executed, each page
read) and warnings; when the build fails it ends with one line per failing
chapter (the file, the code cell's number and its line in the file, and the
error's last line), the warnings that ``-W`` turned into errors and where the
full log is.  It also prints how long the build took.  Usage:
``python book/build_book.py build . --builder html -W ...`` (the arguments are
jupyter-book's); other jupyter-book commands pass their output through.

Before a ``build``, the stale pages are executed into the execution cache
``BOOK_JOBS`` at a time (default 2; see ``book/execute_ahead.py``), so the
build itself only renders them.  ``BOOK_JOBS=1`` leaves every page to
jupyter-book, one at a time.
"""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parent))
import execute_ahead  # noqa: E402  (book/ is not a package)

FAILED = re.compile(r"^(?P<path>\S+\.(?:md|ipynb)): WARNING: Executing notebook failed: (?P<kind>\w+)")
CELL = re.compile(r"An error occurred while executing the following cell:\n-+\n(?P<source>.*?)\n-+\n", re.S)
ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception|Exit|Interrupt)\w*(?::.*)?$")
WARNING = re.compile(r"(?:WARNING|ERROR): ")
SAVED_TRACEBACK = re.compile(r"^(?P<path>\S+\.(?:md|ipynb)): WARNING: Notebook exception traceback saved in: "
                             r"(?P<report>\S+)")
EXECUTED_IN_BUILD = re.compile(r"Executing notebook using (?:local|temporary) CWD")
# Kernel and TensorFlow start-up lines on the kernels' stderr: not Sphinx warnings.
NOISE = ("[IPKernelApp]", "absl::InitializeLog")
# What a build shows on the terminal besides warnings: a page read (and executed, if the cache
# did not hold it) and the verdict.  Everything else goes to the log only.
PROGRESS = re.compile(r"^(?:reading sources\.\.\. \[\s*\d+%\] \S|\S+: Executing notebook using |build (?:succeeded|finished))")
LOG_NAME = "book_build.log"  # under the output's _build/: jupyter-book's and every kernel's output


@dataclass
class CellFailure:
    path: str
    kind: str  # CellExecutionError, CellTimeoutError, DeadKernelError ...
    cell: int | None  # 1-based among the file's code cells
    line: int | None  # 1-based line of the cell's first source line in the file
    error: str

    def describe(self) -> str:
        where = f"code cell {self.cell} (line {self.line})" if self.cell else "a code cell"
        return f"{self.path}: {where} failed: {self.error or self.kind}"


def locate_cell(path: Path, source: str) -> tuple[int | None, int | None]:
    """(cell number, line) of the code cell whose source is ``source``."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None, None
    blocks = list(re.finditer(r"^```\{code-cell\}[^\n]*\n(.*?)^```", text, flags=re.S | re.M))
    want = source.strip()
    for number, block in enumerate(blocks, start=1):
        body = block.group(1)
        # Drop the cell's option lines (":tags: [...]") before comparing.
        code = re.sub(r"\A(?::[\w-]+:.*\n)+\n?", "", body).strip()
        if code == want:
            first = source.strip().splitlines()[0]
            offset = body.find(first)
            line = text.count("\n", 0, block.start(1) + max(offset, 0)) + 1
            return number, line
    return None, None


def failures(log: str) -> list[CellFailure]:
    """Every "Executing notebook failed" in a jupyter-book log, with its cell."""
    lines = log.splitlines()
    found: list[CellFailure] = []
    for i, line in enumerate(lines):
        match = FAILED.match(line)
        if not match:
            continue
        rest = "\n".join(lines[i:i + 400])
        if not CELL.search(rest):
            rest = _saved_report(lines[i:i + 40], match.group("path")) or rest
        cell_match = CELL.search(rest)
        source = cell_match.group("source") if cell_match else ""
        error = ""
        after = rest[cell_match.end():] if cell_match else rest
        for candidate in after.splitlines():
            if ERROR_LINE.match(candidate.strip()) and not candidate.startswith(("nbclient.", "Traceback")):
                error = candidate.strip()
                break
        path = Path(match.group("path"))
        cell, lineno = locate_cell(path, source) if source else (None, None)
        shown = path.relative_to(Path.cwd()) if path.is_absolute() and path.is_relative_to(Path.cwd()) else path
        found.append(CellFailure(str(shown), match.group("kind"), cell, lineno, error))
    return found


def _saved_report(lines: list[str], path: str) -> str:
    """The traceback myst-nb saved for ``path`` (jupyter-book 1 logs only where), colours stripped."""
    for line in lines:
        saved = SAVED_TRACEBACK.match(line)
        if saved and saved.group("path") == path:
            try:
                return execute_ahead.ANSI.sub("", Path(saved.group("report")).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                return ""
    return ""


def other_warnings(log: str) -> list[str]:
    """Sphinx warnings and errors other than failed executions (kernel chatter excluded)."""
    return [line.strip() for line in log.splitlines()
            if WARNING.search(line) and not FAILED.match(line) and not any(n in line for n in NOISE)]


def shown(line: str) -> bool:
    """Whether a line of jupyter-book's output (colours stripped) goes to the terminal: progress
    and warnings, not kernel or TensorFlow chatter."""
    return bool(PROGRESS.match(line)) or (bool(WARNING.search(line)) and not any(n in line for n in NOISE))


def output_folder(argv: list[str]) -> Path:
    """Where a ``build PATH ...`` writes ``_build/`` (``--path-output``, else PATH)."""
    root = Path(argv[1]).resolve()
    return Path(argv[argv.index("--path-output") + 1]).resolve() if "--path-output" in argv[:-1] else root


@contextlib.contextmanager
def output_into(log: TextIO):
    """File descriptors 1 and 2 point at ``log`` while the block runs, so the kernels it starts
    (which inherit them) write their chatter there; yields a function that prints a line on
    the terminal all the same."""
    sys.stdout.flush()
    sys.stderr.flush()
    log.flush()
    saved = os.dup(1), os.dup(2)
    try:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        yield lambda line: os.write(saved[0], f"{line}\n".encode())
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def run_ahead(argv: list[str], log: TextIO | None = None) -> list:
    """For ``build PATH ...``: execute the stale pages ahead (``book/execute_ahead.py``) with the
    kernels' output in ``log``; what ran."""
    if len(argv) < 2 or argv[0] != "build":
        return []
    jobs = execute_ahead.jobs_from_env()
    cache = output_folder(argv) / "_build" / ".jupyter_cache"
    root = Path(argv[1]).resolve()
    if log is None:
        return execute_ahead.execute_ahead(root, cache, jobs, log=lambda line: print(line, flush=True))
    with output_into(log) as terminal:
        return execute_ahead.execute_ahead(root, cache, jobs, log=terminal)


def run_jupyter_book(argv: list[str], log: TextIO | None, show: Callable[[str], bool]) -> tuple[int, str]:
    """(exit status, output with colours stripped) of jupyter-book; each line goes to ``log``, and
    to the terminal when there is no log or ``show`` says so."""
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.Popen([str(jupyter_book), *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace")
    captured = []
    assert proc.stdout is not None
    for line in proc.stdout:
        clean = execute_ahead.ANSI.sub("", line)
        captured.append(clean)
        if log is None:
            sys.stdout.write(line)
            continue
        log.write(clean)
        if show(clean.strip()):
            sys.stdout.write(clean.lstrip())
            sys.stdout.flush()
    return proc.wait(), "".join(captured)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python book/build_book.py build . --builder html [jupyter-book options]", file=sys.stderr)
        return 2
    started = time.perf_counter()
    building = len(argv) >= 2 and argv[0] == "build"
    log_path = output_folder(argv) / "_build" / LOG_NAME if building else None
    with contextlib.ExitStack() as stack:
        log_file = None
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_file = stack.enter_context(log_path.open("w", encoding="utf-8", errors="replace"))
        try:
            ahead = run_ahead(argv, log_file)
        except ValueError as exc:
            print(f"build_book: {exc}", file=sys.stderr)
            return 2
        code, log = run_jupyter_book(argv, log_file, shown)
    elapsed = time.perf_counter() - started
    where = f"; full log (jupyter-book and the kernels): {_shown_path(log_path)}" if log_path else ""
    if building:
        print(f"{len(ahead)} page(s) executed ahead ({sum(r.seconds for r in ahead):.0f} s of execution); "
              f"the build itself executed {len(EXECUTED_IN_BUILD.findall(log))}")
    if code == 0:
        print(f"book built in {elapsed:.0f} s{where}")
        return 0
    print(f"\nbook build FAILED after {elapsed:.0f} s (jupyter-book exited {code}){where}:", file=sys.stderr)
    cells = failures(log)
    for failure in cells:
        print(f"  {failure.describe()}", file=sys.stderr)
    warnings = other_warnings(log)
    if warnings:
        print(f"  {len(warnings)} warning(s), each an error under -W:", file=sys.stderr)
        for warning in warnings[:20]:
            print(f"    {warning}", file=sys.stderr)
    if not cells and not warnings:
        print(f"  no failing cell or warning found in the log; read {_shown_path(log_path) if log_path else 'the output above'}",
              file=sys.stderr)
    return code


def _shown_path(path: Path) -> str:
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
