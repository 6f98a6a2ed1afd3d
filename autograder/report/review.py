"""The integrity review: what an instructor should read in a submission, and why.

A grade is made outside the learner's kernel wherever TensorFlow allows (the judge); what the
kernel still reports (a device string, a count) can be shaped by an answer cell that has read the
grader's source.  Such an answer need not fail any part, so it is *flagged* instead: each
finding names the part, the answer cell, the line and the reason, and goes into
``results.json``'s ``extra_data.review``, the class report ("flagged for review") and ``grade``'s
end-of-run summary -- never into a learner's feedback or ``check``'s report.

Two sources:

* :func:`read_cells` reads the learner's code cells statically (the AST; magics and shell
  lines are read as lines): what they import and call that honest answers to these exercises
  never need -- the interpreter's objects and frames (``gc``, ``sys._getframe``, a traceback's
  ``tb_frame``, ``__closure__``/``__globals__``), ``ctypes``, tracing and audit hooks, IPython
  and Jupyter machinery, file descriptors, signals, threads and processes, sockets, code built
  from computed strings, the grader's own modules and files -- and every attribute written on
  an object the cells did not create (``tf.function = ...``, ``json.JSONEncoder.default = ...``,
  ``setattr(np.testing, ...)``, ``sys.modules[...] = ...``).
* :func:`from_results`: a part that failed on the kernel guard's or the integrity snapshot's
  word ("integrity: ...") is flagged too, with the grader's message.

Thread pools (``concurrent.futures``), ``tf.data``, ``time``, ``traceback.format_exc`` and the
course's own checks are what honest answers use: never flagged.  The tests hold the references,
every right and realistic wrong answer of the catalogue and the book's code cells to no finding.
"""
from __future__ import annotations

import ast
import re
from dataclasses import asdict, dataclass

from autograder.submission import notebook as nbtools


@dataclass(frozen=True)
class Finding:
    """One thing to look at: the part (test ``grade_id``; "" for the whole notebook), the answer
    cell (its ``grade_id``, or ``cell N`` for a cell of the learner's own), the line in that cell
    (1-based; 0 for the whole part) and why."""

    part: str
    cell: str
    line: int
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


#: Modules an honest answer to these exercises never imports, and what importing one means.
MODULES = {
    "ctypes": "reaches memory and C functions directly (ctypes)",
    "_ctypes": "reaches memory and C functions directly (ctypes)",
    "_thread": "starts threads of its own (_thread)",
    "multiprocessing": "starts processes (multiprocessing)",
    "subprocess": "starts processes (subprocess)",
    "signal": "handles signals (signal)",
    "pty": "starts processes (pty)",
    "fcntl": "works on file descriptors (fcntl)",
    "socket": "opens sockets (socket)",
    "IPython.core": "reaches IPython's machinery", "IPython.terminal": "reaches IPython's machinery",
    "IPython.utils": "reaches IPython's machinery",
    "ipykernel": "reaches the kernel's machinery (ipykernel)",
    "jupyter_client": "reaches Jupyter's messaging (jupyter_client)",
    "zmq": "reaches the kernel's sockets (zmq)",
    "traitlets": "reaches IPython's configuration (traitlets)",
    "builtins": "reaches the builtins module",
    "marshal": "loads code objects (marshal)",
    "sysconfig": "looks up the grader's installation (sysconfig)",
    "autograder.submission": "reaches the grader's engine",
    "autograder.sandbox": "reaches the grader's engine",
    "autograder.frontends": "reaches the grader's engine",
    "autograder.results": "reaches the grader's engine",
    "autograder.report": "reaches the grader's engine",
    "autograder.judge": "reaches the grader's judge",
    "autograder.checks.probe": "reaches the judge's requests (autograder.checks.probe)",
    "autograder.checks.plain": "reaches the judge's wire format (autograder.checks.plain)",
    "autograder.checks.kernel_guard": "reaches the kernel guard",
    "autograder.checks.clean_subprocess": "reaches how the checks start processes",
    "autograder.checks.thresholds": "reaches the speed checks' thresholds",
    "autograder.checks.timing_stats": "reaches the speed checks' statistics",
    "autograder.checks.timing_results": "reaches the speed checks' verdicts",
    "autograder.checks.graph_guard": "reaches the judge's graph check",
    "autograder.isolation": "reaches the grader's private roots",
    "tensorflow.tsl.profiler.protobuf": "builds profiler trace protos of its own (XPlane)",
    "tsl.profiler.protobuf": "builds profiler trace protos of its own (XPlane)",
}
#: ``module.function`` calls that mean the same (the module itself is common and honest).
CALLS = {
    "sys._getframe": "reads the interpreter's frames (sys._getframe)",
    "sys._current_frames": "reads other threads' frames (sys._current_frames)",
    "sys.settrace": "installs a tracing hook", "sys.setprofile": "installs a profiling hook",
    "sys.addaudithook": "installs an audit hook", "sys.exit": None,
    "inspect.currentframe": "reads the interpreter's frames (inspect)", "inspect.stack": "reads the interpreter's frames (inspect)",
    "inspect.getouterframes": "reads the interpreter's frames (inspect)", "inspect.trace": "reads the interpreter's frames (inspect)",
    "inspect.getclosurevars": "reads another function's closure (inspect)",
    "traceback.walk_tb": "reads a traceback's frames", "traceback.walk_stack": "reads the interpreter's frames",
    "importlib.reload": "reloads a module", "get_ipython": "reaches IPython's machinery (get_ipython)",
    "IPython.get_ipython": "reaches IPython's machinery (get_ipython)",
    "threading.Thread": "starts a thread of its own (threading.Thread)", "threading.Timer": "starts a thread of its own",
    "threading.settrace": "installs a tracing hook", "threading.setprofile": "installs a profiling hook",
    "threading.excepthook": "replaces the threads' error hook",
}
#: ``gc`` calls other than a collection: walking or freezing the interpreter's objects, or
#: stopping the collector (an attack on the judge's spies can depend on it).
_GC_CALLS = re.compile(r"^gc\.(get_objects|get_referrers|get_referents|disable|freeze|unfreeze|set_threshold|"
                       r"callbacks|garbage|is_tracked|get_stats)$")
#: What an answer may change on objects it did not make: the environment TensorFlow reads.
ALLOWED_WRITES = ("os.environ",)
_OS_CALLS = re.compile(r"^os\.(dup2?|close|closerange|open|pipe2?|fdopen|fork|forkpty|kill|killpg|system|popen|"
                       r"exec\w*|spawn\w*|posix_spawnp?|setsid|_exit|register_at_fork|sched_setaffinity)$")
#: Attributes whose read reaches frames, closures or globals of code that is not the learner's.
ATTRIBUTES = {"f_back": "frames", "f_locals": "frames", "f_globals": "frames", "f_code": "frames",
              "tb_frame": "frames", "gi_frame": "frames", "cr_frame": "frames", "ag_frame": "frames",
              "__closure__": "another function's closure", "__globals__": "another function's globals",
              "__subclasses__": "every subclass of a class", "__builtins__": "the builtins",
              "_STAGED": "the judge's staged requests"}
#: Names of the sandbox's own files and folders: a string that names one reaches the grader.
GRADER_FILES = re.compile(r"\.req\b|\.ans\b|autograder-sandboxes|ag-judge|/proc/\d+/|/proc/self/fd|/dev/fd/|"
                          r"\.ipynb_checkpoints|/solutions\b|BEGIN SOLUTION|HIDDEN TESTS")
#: Text that only TensorFlow writes: its placement log.  An answer that writes it forges what a
#: placement capture reads.
PLACEMENT_LOG = re.compile(r"Executing op |/job:localhost/replica:\d+/task:\d+/device:")
#: Names an answer defines on its own classes that a check reads off TensorFlow's objects: such an
#: object answers what a placement or dtype probe asks, whatever it holds.
REPORTED_ATTRIBUTES = {"device": "a device", "backing_device": "a device", "_device": "a device"}
_SHELL_CELL = re.compile(r"^%%(bash|sh|script|system|perl|ruby|python\d?|writefile)\b")


def _lines_as_python(source: str) -> tuple[str, list[tuple[int, str]]]:
    """The cell as Python (magic and shell lines blanked, line numbers kept) and the findings
    the blanked lines make on their own."""
    findings, lines = [], source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        if _SHELL_CELL.match(lines[0].lstrip()):
            return "", [(1, f"runs a shell or another program ({lines[0].strip().split()[0]})")]
        lines[0] = ""
    for number, line in enumerate(lines, start=1):
        stripped = line.lstrip()
        if stripped.startswith("!") or re.match(r"^%(sx|system|sc)\b", stripped):
            findings.append((number, "runs a shell command"))
            lines[number - 1] = ""
        elif stripped.startswith("%"):
            lines[number - 1] = ""
        elif re.match(r"^\w+\s*=\s*!", stripped):  # x = !ls
            findings.append((number, "runs a shell command"))
            lines[number - 1] = ""
    return "\n".join(lines), findings


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


class _Reader(ast.NodeVisitor):
    """Collects (line, reason) for one cell, knowing which names the learner's cells bind."""

    def __init__(self, own: set[str], imported: dict[str, str], log_names: set[str] = frozenset()) -> None:
        self.own, self.imported, self.log_names = own, imported, log_names
        self.found: list[tuple[int, str]] = []

    def flag(self, node: ast.AST, reason: str) -> None:
        self.found.append((getattr(node, "lineno", 0), reason))

    def _module(self, node: ast.AST, name: str) -> None:
        for prefix, reason in MODULES.items():
            if name == prefix or name.startswith(prefix + "."):
                self.flag(node, reason)
                return

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        self._module(node, base)
        for alias in node.names:
            self._module(node, f"{base}.{alias.name}")
            self._qualified(node, f"{base}.{alias.name}")

    def _qualified(self, node: ast.AST, name: str) -> None:
        reason = CALLS.get(name)
        if reason:
            self.flag(node, reason)
        elif _OS_CALLS.match(name):
            self.flag(node, f"works on processes or file descriptors ({name})")
        elif _GC_CALLS.match(name):
            self.flag(node, f"reaches the interpreter's objects or its collector ({name})")

    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        if name:
            real = self.imported.get(name.split(".")[0])
            full = name if real is None else ".".join([real, *name.split(".")[1:]])
            self._qualified(node, full)
            last = full.rsplit(".", 1)[-1]
            if last in ("exec", "eval", "compile", "__import__", "import_module") and node.args \
                    and not isinstance(node.args[0], ast.Constant):
                self.flag(node, f"runs code or imports a module named by a computed string ({last})")
            if last in ("setattr", "delattr") and name == last and node.args:
                self._written(node, node.args[0], f"{last}(...)")
            if last in ("print", "write", "writelines", "info", "warning", "error") and any(
                    self._log_text(part) for arg in [*node.args, *(k.value for k in node.keywords)]
                    for part in ast.walk(arg)):
                self.flag(node, "writes text that looks like TensorFlow's placement log (what a capture reads)")
        self.generic_visit(node)

    def _log_text(self, node: ast.AST) -> bool:
        """Placement-log text, written here or held by a name the learner's cells bind to it."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str) and bool(PLACEMENT_LOG.search(node.value))
        return isinstance(node, ast.Name) and node.id in self.log_names

    def visit_Attribute(self, node: ast.Attribute) -> None:
        what = ATTRIBUTES.get(node.attr)
        if what:
            self.flag(node, f"reaches {what} ({node.attr})")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self.flag(node, "reaches the builtins (__builtins__)")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and GRADER_FILES.search(node.value):
            self.flag(node, f"names the grader's files or another process's ({node.value[:60]!r})")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for item in ast.walk(node):
            named = item.name if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) else (
                item.attr if isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store) else (
                    item.id if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store) else None))
            if named in REPORTED_ATTRIBUTES:
                self.flag(item, f"its class {node.name} answers {REPORTED_ATTRIBUTES[named]} of its own ({named}), "
                                "as a check reads it off TensorFlow's objects")
        self.generic_visit(node)

    def _written(self, node: ast.AST, target: ast.AST, how: str) -> None:
        root = _root(target)
        if root is None or root in self.own:
            return
        chain = _dotted(target.value if isinstance(target, ast.Subscript) else target) or root
        shown = chain + ("[...]" if isinstance(target, ast.Subscript) else "")
        real = ".".join([self.imported.get(root, root), *chain.split(".")[1:]])
        if real.startswith(ALLOWED_WRITES):
            return
        self.flag(node, f"changes {shown} with {how}, an object the answer did not create")

    def _targets(self, node: ast.AST, targets: list[ast.AST]) -> None:
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, (ast.Attribute, ast.Subscript)) and isinstance(getattr(part, "ctx", None),
                                                                                  (ast.Store, ast.Del)):
                    self._written(node, part, "an assignment" if isinstance(part.ctx, ast.Store) else "del")

    def visit_Assign(self, node: ast.Assign) -> None:
        self._targets(node, node.targets)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._targets(node, [node.target])
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._targets(node, [node.target])
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        self._targets(node, node.targets)
        self.generic_visit(node)


def _bound_names(trees: list[ast.AST]) -> tuple[set[str], dict[str, str]]:
    """Names the learner's cells bind themselves (assignments, definitions, parameters, loop and
    ``with`` targets...) and, apart, those they bind by import (``np`` -> ``numpy``)."""
    own, imported = set(), {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.arg):
                own.add(node.arg)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    base = f"{node.module}." if isinstance(node, ast.ImportFrom) and node.module else ""
                    imported[local] = base + (alias.name if alias.asname or base else alias.name.split(".")[0])
            elif isinstance(node, ast.ExceptHandler) and node.name:
                own.add(node.name)
    return own - set(imported), imported


def _top_level_bindings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) for every name a module's top level binds."""
    bound = []
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.append((node.lineno, node.name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound += [(node.lineno, a.asname or a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With)):
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if not isinstance(node, ast.With) else
                       [i.optional_vars for i in node.items if i.optional_vars is not None])
            bound += [(n.lineno, n.id) for t in targets for n in ast.walk(t)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    return bound


def exercise_names(source_nb) -> set[str]:
    """The names the exercise's own code cells (setup, locked cells, examples) bind at top level:
    what the judge's requests and the integrity snapshot expect to find as the exercise made them."""
    names = set()
    for cell in source_nb.cells:
        if cell.get("cell_type") == "code" and not nbtools.is_answer_cell(cell) and not nbtools.is_test_cell(cell):
            try:
                names.update(name for _, name in _top_level_bindings(ast.parse(_lines_as_python(cell.source)[0])))
            except SyntaxError:
                continue
    return names


def read_cells(cells: list[tuple[str, str, str]], protected: set[str] = frozenset()) -> list[Finding]:
    """Findings for the learner's code cells, given as ``(part, cell label, source)``;
    ``protected``: names the exercise's own cells define (rebinding one is flagged)."""
    parsed = []
    for part, label, source in cells:
        text, early = _lines_as_python(source)
        try:
            tree = ast.parse(text)
        except SyntaxError:  # a cell that does not parse does not run either
            tree = ast.Module(body=[], type_ignores=[])
        parsed.append((part, label, tree, early))
    own, imported = _bound_names([tree for _, _, tree, _ in parsed])
    log_names = {target.id for _, _, tree, _ in parsed for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name) and any(
                     isinstance(c, ast.Constant) and isinstance(c.value, str) and PLACEMENT_LOG.search(c.value)
                     for c in ast.walk(node.value))}
    findings = []
    for part, label, tree, early in parsed:
        reader = _Reader(own, imported, log_names)
        reader.visit(tree)
        rebound = [(line, f"rebinds {name}, which the exercise's own cells define")
                   for line, name in _top_level_bindings(tree) if name in protected]
        for line, reason in sorted(set(early + reader.found + rebound)):
            findings.append(Finding(part, label, line, reason))
    return findings


def learner_cells(submission_nb, source_nb) -> list[tuple[str, str, str]]:
    """The submission's code cells that are the learner's: answer cells (labelled by grade_id,
    each under the part whose test follows it in the source) and cells of its own; cells that
    are the source's word for word (the release's examples) and test or locked cells (restored
    from the source at grading) are not."""
    part_of, pending = {}, []
    for cell in source_nb.cells:
        gid = nbtools.nbgrader_meta(cell).get("grade_id")
        if nbtools.is_answer_cell(cell) and gid:
            pending.append(gid)
        elif nbtools.is_test_cell(cell) and gid:
            part_of.update({answer: gid for answer in pending})
            pending = []
    restored = {nbtools.nbgrader_meta(c).get("grade_id") for c in source_nb.cells
                if nbtools.is_test_cell(c) or nbtools.is_locked_cell(c)}
    given = {c.source.strip() for c in source_nb.cells if c.get("cell_type") == "code"
             and not nbtools.is_answer_cell(c)}
    cells = []
    for number, cell in enumerate(submission_nb.cells, start=1):
        gid = nbtools.nbgrader_meta(cell).get("grade_id")
        if cell.get("cell_type") != "code" or nbtools.is_test_cell(cell) or gid in restored:
            continue
        if gid and gid in part_of:
            cells.append((part_of[gid], gid, cell.source))
        elif cell.source.strip() and cell.source.strip() not in given:
            cells.append(("", f"cell {number}", cell.source))
    return cells


def from_results(results) -> list[Finding]:
    """A part that failed on the kernel guard's or the integrity snapshot's word."""
    return [Finding(t.name, "", 0, (t.output.strip().splitlines() or [""])[0][:300]) for t in results.tests
            if "integrity" in t.output and t.score < t.max_score]


def review(submission_nb, source_nb, results) -> list[dict]:
    """``extra_data.review`` for a graded submission, sorted by part, cell and line."""
    found = set(from_results(results))
    if submission_nb is not None:
        found |= set(read_cells(learner_cells(submission_nb, source_nb), exercise_names(source_nb)))
    return [f.to_dict() for f in sorted(found, key=lambda f: (f.part, f.cell, f.line, f.reason))]
