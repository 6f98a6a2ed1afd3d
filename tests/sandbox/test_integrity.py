"""Tamper detection: each kind of patch is found and named; untouched state is clean."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from autograder.checks import timing
from autograder.sandbox import integrity


@pytest.fixture
def snap():
    return integrity.take_snapshot(include_tf=False)


def test_untouched_state_has_no_problems(snap):
    assert snap.problems({"x": 1}) == []


def test_patched_clock_is_named(snap, monkeypatch):
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    assert "time.perf_counter was replaced" in snap.problems()


def test_replaced_check_function_and_its_code_are_named(snap, monkeypatch):
    monkeypatch.setattr(timing, "compare_outputs", lambda *a, **k: None)
    assert "autograder.checks.timing.compare_outputs was replaced" in snap.problems()
    monkeypatch.undo()
    original = timing.to_host.__code__
    try:
        timing.to_host.__code__ = (lambda value: value).__code__
        assert "the code of autograder.checks.timing.to_host was replaced" in snap.problems()
    finally:
        timing.to_host.__code__ = original
    assert snap.problems() == []


def test_replaced_module_and_builtin_are_named(snap, monkeypatch):
    import builtins

    monkeypatch.setitem(sys.modules, "autograder.checks.timing", type(sys)("fake"))
    monkeypatch.setattr(builtins, "len", lambda obj: 0)
    found = snap.problems()
    assert "sys.modules['autograder.checks.timing'] was replaced" in found
    assert "the builtin len was replaced" in found


def test_numpy_function_used_by_checks_is_watched(snap, monkeypatch):
    import numpy

    monkeypatch.setattr(numpy, "allclose", lambda *a, **k: True)
    assert "numpy.allclose was replaced" in snap.problems()


def test_trace_function_is_named(snap):
    previous = sys.gettrace()
    sys.settrace(lambda *a: None)
    try:
        found = snap.problems()
    finally:
        sys.settrace(previous)
    assert any("sys.settrace" in p for p in found)


def test_shadowed_grader_names_only_when_the_test_uses_them(snap):
    ns = {"compare_outputs": lambda *a: None, "to_host": lambda v: v, "median_ci": timing.median_ci}
    found = snap.problems(ns, names=["compare_outputs", "median_ci"])
    assert found == ["the notebook's compare_outputs is not the grader's autograder.checks.timing.compare_outputs"]
    assert snap.problems(ns, names=["something_else"]) == []


def test_global_names_cover_nested_code():
    source = "def f():\n    return capture(x)\nassert_ops(f())\n"
    assert {"capture", "assert_ops", "f"} <= set(integrity.global_names(source))
    assert integrity.global_names("def (:") is None


def test_report_round_trip_and_missing_answer_fails_closed():
    assert integrity.parse_report("noise\nTOK[]\n", "TOK") == []
    assert integrity.parse_report('TOK["time.time was replaced"]', "TOK") == ["time.time was replaced"]
    assert "did not answer" in integrity.parse_report("TOK[] but no token", "OTHER")[0]
    assert "did not answer" in integrity.parse_report("TOKnot json", "TOK")[0]
    assert integrity.message(["a", "b"]).startswith("integrity: a; b.")


def _run_guarded(code: str, tmp_path) -> subprocess.CompletedProcess:
    # Audit hooks cannot be removed, so each check runs in a child process.
    script = textwrap.dedent(f"""
        from autograder.sandbox import integrity
        integrity.install_guards([{str(tmp_path / 'hidden')!r}], allow=[{str(tmp_path / 'hidden' / 'python')!r}])
    """) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)


def test_guards_refuse_hidden_folders_but_allow_the_python_install(tmp_path):
    (tmp_path / "hidden" / "python").mkdir(parents=True)
    (tmp_path / "hidden" / "tests.txt").write_text("secret")
    (tmp_path / "hidden" / "python" / "lib.txt").write_text("ok")
    (tmp_path / "public.txt").write_text("public")
    proc = _run_guarded(f"""
        import os
        print(open({str(tmp_path / 'public.txt')!r}).read())
        print(open({str(tmp_path / 'hidden' / 'python' / 'lib.txt')!r}).read())
        for attempt in (lambda: open({str(tmp_path / 'hidden' / 'tests.txt')!r}),
                        lambda: os.listdir({str(tmp_path / 'hidden')!r})):
            try:
                attempt()
                print("LEAK")
            except PermissionError as exc:
                print("refused:", exc)
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "public\nok\n" in proc.stdout
    assert proc.stdout.count("refused: the grader does not let notebooks read") == 2
    assert "LEAK" not in proc.stdout


def test_guards_refuse_the_network_but_not_loopback(tmp_path):
    proc = _run_guarded("""
        import socket
        server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen()
        socket.create_connection(server.getsockname(), timeout=2).close()
        print("loopback ok")
        try:
            socket.create_connection(("192.0.2.1", 80), timeout=2)
            print("LEAK")
        except PermissionError as exc:
            print("refused:", exc)
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "loopback ok" in proc.stdout and "refused: network access is disabled" in proc.stdout


class _FakeEvents:
    def __init__(self):
        self.callbacks = {"post_run_cell": [], "pre_run_cell": []}


class _FakeShell:
    def __init__(self):
        self.custom_exceptions = ()
        self.input_transformers_cleanup, self.input_transformers_post, self.ast_transformers = [], [], []
        self.events = _FakeEvents()

    def run_cell(self, *a):
        return None


def test_event_callbacks_from_the_notebook_count_but_libraries_do_not():
    import json

    shell = _FakeShell()
    snap = integrity.take_snapshot(include_tf=False, shell=shell)
    shell.events.callbacks["post_run_cell"].append(json.dumps)  # a library function (like matplotlib's flush)
    assert snap.problems() == []
    notebook_code = compile("def sneaky(info):\n    pass\n", "<cell>", "exec")
    ns = {"__name__": "__main__"}
    exec(notebook_code, ns)
    shell.events.callbacks["pre_run_cell"].append(ns["sneaky"])
    assert snap.problems() == ["an IPython pre_run_cell callback was registered by the notebook"]


def test_guards_refuse_writes_outside_the_sandbox_folder(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (tmp_path / "elsewhere.txt").write_text("keep")
    proc = _run_guarded(f"""
        import os
        integrity.install_guards([], writable=[{str(own)!r}])
        open({str(own / 'mine.txt')!r}, "w").write("fine")
        print(open({str(tmp_path / 'elsewhere.txt')!r}).read())
        for attempt in (lambda: open({str(tmp_path / 'elsewhere.txt')!r}, "w"),
                        lambda: os.open({str(tmp_path / 'new.txt')!r}, os.O_CREAT | os.O_WRONLY),
                        lambda: os.remove({str(tmp_path / 'elsewhere.txt')!r})):
            try:
                attempt()
                print("LEAK")
            except PermissionError as exc:
                print("refused:", exc)
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "keep" in proc.stdout and proc.stdout.count("refused: notebooks may only") == 3
    assert "LEAK" not in proc.stdout and (own / "mine.txt").read_text() == "fine"
    assert (tmp_path / "elsewhere.txt").read_text() == "keep"
