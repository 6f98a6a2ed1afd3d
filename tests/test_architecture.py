"""The package's shape: roles by folder and what each may import, no import cycles, one command
line, short modules and functions, private names kept in their package, tests beside their modules.

ARCHITECTURE.md describes these rules; this file is what keeps them true.
"""
from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "autograder"
# One folder per job.  What each may import of the package besides itself and the leaves: the
# table is the house's floor plan (a role never imports one that imports it back).
MAY_IMPORT = {
    "checks": set(),  # runs in a learner's kernel: it pulls in nothing of the grader
    "judge": {"checks"},  # the grader's trusted process: the checks and nothing of the engine
    "submission": {"judge"},  # what a source or submission is (the judge's reading of a hidden test)
    "results": set(),  # results and their outputs: plain data, feedback pages, gradebooks
    "sandbox": {"checks", "judge", "submission", "results"},  # the host side and its processes
    "report": {"submission", "results"},  # the class report, read from results folders
    "frontends": {"checks", "judge", "submission", "results", "sandbox", "report"},  # check, grade, ...
    "course": {"checks", "frontends"},  # tools that build the course, not grades
    "cli": {"checks", "judge", "submission", "results", "sandbox", "report", "frontends", "course"},
}
ROLES = tuple(MAY_IMPORT)
# Top-level modules: the package marker, ``python -m autograder``, and the shared leaves every
# role may use (errors, atomic files, forking, private roots).
TOP_LEVEL = {"__init__.py", "__main__.py", "errors.py", "atomic.py", "forking.py", "isolation.py"}
LEAVES = ("autograder.errors", "autograder.atomic", "autograder.forking", "autograder.isolation")
# Process entry points the grader itself starts (not commands a person types).
INTERNAL_ENTRY_POINTS = {"autograder.sandbox.worker", "autograder.sandbox.kernel", "autograder.sandbox.zygote",
                         "autograder.checks.placement_boot", "autograder.checks.savedmodel",
                         "autograder.judge.process", "autograder.judge.zygote", "autograder.judge.fresh_python",
                         "autograder.checks.opbuild", "autograder.isolation"}
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 600


def role_of(name: str) -> str | None:
    """The role folder of module ``name`` (None for a top-level module)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in MAY_IMPORT else None


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports_of(path: Path, known: dict[str, Path]) -> set[str]:
    """Every autograder module ``path`` imports, at its top or inside a function."""
    deps = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autograder"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                deps.add(full if full in known else node.module)
        elif isinstance(node, ast.Import):
            deps.update(a.name for a in node.names if a.name.startswith("autograder"))
    return {d for d in deps if d in known}


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(path, known) - {name, "autograder"} for name, path in known.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if not state.get(dep):
                found = visit(dep, stack)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if not state.get(node):
            found = visit(node, [])
            if found:
                return found
    return None


def test_the_tree_shows_the_roles():
    top = {p.name for p in PACKAGE.iterdir() if p.suffix == ".py"}
    assert top == TOP_LEVEL, f"modules at the top of autograder/ must belong to a role folder: {sorted(top - TOP_LEVEL)}"
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.rglob("*.py"))}  # not stale bytecode
    assert folders == set(ROLES), f"every folder of autograder/ is a role of MAY_IMPORT: {sorted(folders ^ set(ROLES))}"
    for role in ROLES:
        assert (PACKAGE / role / "__init__.py").read_text(encoding="utf-8").startswith('"""'), \
            f"autograder/{role}/__init__.py must say what the role is for"


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_roles_form_no_cycle():
    """The floor plan itself: no role may import one that may import it back."""
    assert find_cycle(MAY_IMPORT) is None


def test_each_role_imports_only_what_it_may():
    graph = import_graph()
    bad = []
    for name, deps in graph.items():
        role = role_of(name)
        if role is None:
            continue
        for dep in deps:
            other = role_of(dep)
            if other is not None and other != role and other not in MAY_IMPORT[role]:
                bad.append(f"{name} imports {dep} ({role} may import {sorted(MAY_IMPORT[role]) or 'no role'})")
    assert not bad, "\n".join(bad)


def test_the_role_check_catches_an_import_up_a_floor():
    assert role_of("autograder.checks.timing") == "checks" and role_of("autograder.errors") is None
    assert "sandbox" not in MAY_IMPORT["checks"] and "frontends" not in MAY_IMPORT["sandbox"]


def test_the_leaves_import_nothing_of_the_package():
    graph = import_graph()
    for name in LEAVES:
        assert graph[name] == set(), f"{name} is a leaf (every role imports it) but imports {sorted(graph[name])}"


def test_one_command_line():
    graph = import_graph()
    importers = sorted(n for n, deps in graph.items() if any(d.startswith("autograder.cli") for d in deps)
                       and role_of(n) != "cli" and n != "autograder.__main__")
    assert not importers, f"only autograder/__main__.py may import the command line: {importers}"
    for name, path in modules().items():
        if role_of(name) == "cli":
            continue
        text = path.read_text(encoding="utf-8")
        assert "import argparse" not in text, f"{name} parses arguments: commands belong in autograder/cli/"
        if 'if __name__ == "__main__"' in text and name != "autograder.__main__":
            assert name in INTERNAL_ENTRY_POINTS, f"{name} has its own __main__: delegate to autograder.cli"


def test_modules_are_short():
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them along a seam): {long}"


def package_of(name: str) -> str:
    """``autograder.<role>`` for a module in a role folder, the module itself at the top."""
    role = role_of(name)
    return f"autograder.{role}" if role else name


def private_imports_across_packages() -> list[str]:
    """``from autograder... import _name`` where the importer is not in the name's package."""
    found = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autograder"):
                for alias in node.names:
                    if alias.name.startswith("_") and package_of(node.module) != package_of(name):
                        found.append(f"{name} imports {node.module}.{alias.name}")
    return found


def test_private_names_stay_in_their_package():
    found = private_imports_across_packages()
    assert not found, f"a private name is imported from another package (make it public or move it): {found}"


def test_functions_are_short_or_say_why():
    long = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                doc = ast.get_docstring(node) or ""
                if length > MAX_FUNCTION_LINES and "Long because" not in doc:
                    long.append(f"{name}.{node.name} ({length} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines without 'Long because' in the docstring: {long}"


def test_integrity_protects_exactly_the_checks_folder():
    from autograder.sandbox.integrity import check_module_names

    on_disk = sorted(f"autograder.checks.{p.stem}" for p in (PACKAGE / "checks").glob("*.py")
                     if not p.name.startswith("_"))
    assert check_module_names() == on_disk


def test_tests_mirror_the_layout():
    for role in ROLES:
        if role != "cli":  # the command line's tests are tests/test_cli*.py
            assert (ROOT / "tests" / role).is_dir(), f"tests/{role}/ mirrors autograder/{role}/"
    for path in (PACKAGE / "checks").glob("*.py"):
        if path.name.startswith("_") or path.stem in ("placement_boot",):
            continue
        assert (ROOT / "tests" / "checks" / f"test_{path.stem}.py").is_file(), \
            f"autograder/checks/{path.name} has no tests/checks/test_{path.stem}.py"


def test_a_test_named_after_a_module_sits_in_that_modules_folder():
    homes: dict[str, set[Path]] = {}  # module stem -> the tests/ folders that mirror a module of that name
    for name, path in modules().items():
        folder = path.parent.relative_to(PACKAGE)
        if path.name == "__init__.py":  # a package: its tests beside it or inside its own folder
            homes.setdefault(path.parent.name, set()).update({ROOT / "tests" / folder.parent, ROOT / "tests" / folder})
        else:
            homes.setdefault(path.stem, set()).add(ROOT / "tests" / folder)
    misplaced = [str(test.relative_to(ROOT)) for test in (ROOT / "tests").rglob("test_*.py")
                 if test.stem[len("test_"):] in homes and test.parent not in homes[test.stem[len("test_"):]]]
    assert not misplaced, f"tests named after a module must sit in tests/<its folder>/: {misplaced}"


def test_architecture_page_is_short_and_names_every_role():
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 150
    for role in ROLES:
        assert f"autograder/{role}/" in text
