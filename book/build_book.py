"""``make book``: run jupyter-book and, when it fails, name the chapter and cell.

jupyter-book reports a failing cell inside two nested tracebacks and ends with
"Look above for the cause".  This wrapper passes its output through unchanged
and, when the build fails, ends with one line per failing chapter (the file,
the code cell's number and its line in the file, and the error's last line)
and the warnings that ``-W`` turned into errors.  It also prints how long the
build took.  Usage: ``python book/build_book.py build . --builder html -W ...``
(the arguments are jupyter-book's).

Before a ``build``, the stale pages are executed into the execution cache
``BOOK_JOBS`` at a time (default 2; see ``book/execute_ahead.py``), so the
build itself only renders them.  ``BOOK_JOBS=1`` leaves every page to
jupyter-book, one at a time.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import execute_ahead  # noqa: E402  (book/ is not a package)

FAILED = re.compile(r"^(?P<path>\S+\.(?:md|ipynb)): WARNING: Executing notebook failed: (?P<kind>\w+)")
CELL = re.compile(r"An error occurred while executing the following cell:\n-+\n(?P<source>.*?)\n-+\n", re.S)
ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception|Exit|Interrupt)\w*(?::.*)?$")
WARNING = re.compile(r"(?:WARNING|ERROR): ")
EXECUTED_IN_BUILD = re.compile(r"Executing notebook using (?:local|temporary) CWD")
# Kernel and TensorFlow start-up lines on the kernels' stderr: not Sphinx warnings.
NOISE = ("[IPKernelApp]", "absl::InitializeLog")


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


def other_warnings(log: str) -> list[str]:
    """Sphinx warnings and errors other than failed executions (kernel chatter excluded)."""
    return [line.strip() for line in log.splitlines()
            if WARNING.search(line) and not FAILED.match(line) and not any(n in line for n in NOISE)]


def run_ahead(argv: list[str]) -> list:
    """For ``build PATH ...``: execute the stale pages ahead (``book/execute_ahead.py``); what ran."""
    if len(argv) < 2 or argv[0] != "build":
        return []
    jobs = execute_ahead.jobs_from_env()
    root = Path(argv[1]).resolve()
    out = Path(argv[argv.index("--path-output") + 1]).resolve() if "--path-output" in argv[:-1] else root
    return execute_ahead.execute_ahead(root, out / "_build" / ".jupyter_cache", jobs,
                                       log=lambda line: print(line, flush=True))


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python book/build_book.py build . --builder html [jupyter-book options]", file=sys.stderr)
        return 2
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    started = time.perf_counter()
    try:
        ahead = run_ahead(argv)
    except ValueError as exc:
        print(f"build_book: {exc}", file=sys.stderr)
        return 2
    proc = subprocess.Popen([str(jupyter_book), *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace")
    captured = []
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        captured.append(execute_ahead.ANSI.sub("", line))
    code = proc.wait()
    elapsed = time.perf_counter() - started
    log = "".join(captured)
    if argv[:1] == ["build"]:
        print(f"{len(ahead)} page(s) executed ahead ({sum(r.seconds for r in ahead):.0f} s of execution); "
              f"the build itself executed {len(EXECUTED_IN_BUILD.findall(log))}")
    if code == 0:
        print(f"book built in {elapsed:.0f} s")
        return 0
    print(f"\nbook build FAILED after {elapsed:.0f} s (jupyter-book exited {code}):", file=sys.stderr)
    cells = failures(log)
    for failure in cells:
        print(f"  {failure.describe()}", file=sys.stderr)
    warnings = other_warnings(log)
    if warnings:
        print(f"  {len(warnings)} warning(s), each an error under -W:", file=sys.stderr)
        for warning in warnings[:20]:
            print(f"    {warning}", file=sys.stderr)
    if not cells and not warnings:
        print("  no failing cell or warning found in the log; read the output above", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
