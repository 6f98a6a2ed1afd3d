"""The package's shape: roles by folder, no import cycles, one command line, short functions.

ARCHITECTURE.md describes these rules; this file is what keeps them true.
"""
from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "autograder"
ROLES = ("checks", "judge", "grading", "course")
# Top-level modules: the package marker, ``python -m autograder``, the one CLI, and the
# shared leaves every role may use (errors, atomic files, forking, private roots).
TOP_LEVEL = {"__init__.py", "__main__.py", "cli.py", "errors.py", "atomic.py", "forking.py", "isolation.py"}
LEAVES = ("autograder.errors", "autograder.atomic", "autograder.forking", "autograder.isolation")
# Process entry points the grader itself starts (not commands a person types).
INTERNAL_ENTRY_POINTS = {"autograder.sandbox.worker", "autograder.checks.placement_boot",
                         "autograder.checks.savedmodel", "autograder.judge.process",
                         "autograder.sandbox.zygote", "autograder.judge.zygote",
                         "autograder.judge.fresh_python", "autograder.checks.opbuild", "autograder.isolation"}
MAX_FUNCTION_LINES = 80


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
    for role in ROLES:
        assert (PACKAGE / role / "__init__.py").read_text(encoding="utf-8").startswith('"""'), \
            f"autograder/{role}/__init__.py must say what the role is for"


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_leaves_import_nothing_of_the_package():
    graph = import_graph()
    for name in LEAVES:
        assert graph[name] == set(), f"{name} is a leaf (every role imports it) but imports {sorted(graph[name])}"


def test_checks_never_import_the_engine_or_the_course_tools():
    """What runs in a learner's kernel must not pull in the grader (or be patched through it)."""
    for name, deps in import_graph().items():
        if name.startswith("autograder.checks"):
            bad = sorted(d for d in deps if d.startswith(("autograder.grading", "autograder.course", "autograder.cli",
                                                          "autograder.judge")))
            assert not bad, f"{name} imports {bad}"


def test_the_judge_imports_only_the_checks():
    """The judge process runs instructors' hidden tests with the grader's trust: it needs the
    checks (timing, plain data, probes) and nothing of the engine, the course tools or the CLI."""
    for name, deps in import_graph().items():
        if name.startswith("autograder.judge"):
            bad = sorted(d for d in deps if d.startswith(("autograder.grading", "autograder.course", "autograder.cli")))
            assert not bad, f"{name} imports {bad}"


def test_one_command_line_module():
    graph = import_graph()
    importers = sorted(n for n, deps in graph.items() if "autograder.cli" in deps and n != "autograder.__main__")
    assert not importers, f"only autograder/__main__.py may import the command-line module: {importers}"
    for name, path in modules().items():
        if name in ("autograder.cli",):
            continue
        text = path.read_text(encoding="utf-8")
        assert "import argparse" not in text, f"{name} parses arguments: commands belong in autograder/cli.py"
        if 'if __name__ == "__main__"' in text and name != "autograder.__main__":
            assert name in INTERNAL_ENTRY_POINTS, f"{name} has its own __main__: delegate to autograder.cli"


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
        assert (ROOT / "tests" / role).is_dir(), f"tests/{role}/ mirrors autograder/{role}/"
    for path in (PACKAGE / "checks").glob("*.py"):
        if path.name.startswith("_") or path.stem in ("placement_boot",):
            continue
        assert (ROOT / "tests" / "checks" / f"test_{path.stem}.py").is_file(), \
            f"autograder/checks/{path.name} has no tests/checks/test_{path.stem}.py"


def test_architecture_page_is_short_and_names_every_role():
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 150
    for role in ROLES:
        assert f"autograder/{role}/" in text
