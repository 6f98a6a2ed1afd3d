"""The hostile-submission catalogue graded as one batch.

Every case in ``tests/files/hostile/catalogue.py`` is graded by the ``grade``
command's function in one batch with two workers and tight limits, between
correct submissions: each case must get exactly its expected per-part scores
and messages, the correct ones full marks whatever their neighbours did, and
nothing may leak (hidden test text in the outputs, files written outside the
sandbox).
"""
from __future__ import annotations

import json
import os
import socket
import threading

import pytest

from autograder.frontends import grade
from autograder.sandbox import host as sandbox
from tests.files.hostile.catalogue import CASES, PROBE_FILE, SECRET_ENV, TINY_SOURCE, Context

LIMITS = sandbox.Limits(cell_timeout_s=8, notebook_timeout_s=90, memory_mb=768, output_kb=256,
                        max_processes=64, disk_mb=256)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    submissions, out = root / "submitted", root / "graded"
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    threading.Thread(target=lambda: [server.accept()[0].close() for _ in iter(int, 1)], daemon=True).start()
    ctx = Context(submissions=submissions, out=out, host_port=server.getsockname()[1])
    for case in CASES:
        folder = submissions / case.name / "tiny"
        folder.mkdir(parents=True)
        (folder / "tiny.ipynb").write_bytes(case.build(ctx))
    os.environ[SECRET_ENV] = "hunter2"
    try:
        rows = grade.grade(submissions, out, workers=2, source=TINY_SOURCE, limits=LIMITS,
                           progress_stream=open(os.devnull, "w"))
    finally:
        del os.environ[SECRET_ENV]
        server.close()
    return {row.student: row.results for row in rows}, out


@pytest.mark.slow  # grades the hostile batch in sandboxes
def test_the_batch_grades_every_case(batch):
    results, out = batch
    assert sorted(results) == sorted(c.name for c in CASES)
    assert (out / "grades.csv").read_text().count("\n") == len(CASES) + 1


@pytest.mark.slow  # grades the hostile batch in sandboxes
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_gets_expected_scores_and_messages(batch, case):
    results, _ = batch
    got = results[case.name]
    details = "\n".join(f"{t.name}: {t.score}: {t.output}" for t in got.tests) + f"\nnote: {got.output}"
    expect = case.expect
    if case.without_namespaces and not (got.sandbox or {}).get("network", "").startswith("namespace"):
        expect = case.without_namespaces
    assert {t.name: t.score for t in got.tests} == expect, details
    for gid, text in case.messages.items():
        assert text in got.by_name()[gid].output, details
    assert case.note in got.output, details


@pytest.mark.slow  # grades the hostile batch in sandboxes
def test_no_output_contains_hidden_test_text(batch):
    _, out = batch
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            assert "hidden-marker" not in text, f"{path} quotes a hidden test"


@pytest.mark.slow  # grades the hostile batch in sandboxes
def test_nothing_was_written_outside_the_sandbox(batch):
    _, out = batch
    assert not PROBE_FILE.exists()
    assert not (out / "PWNED").exists()
    assert not os.path.exists("/etc/autograder-pwned")


@pytest.mark.slow  # grades the hostile batch in sandboxes
def test_results_record_the_isolation_in_force(batch):
    results, _ = batch
    info = results["correct-1"].sandbox
    assert info and "network" in info and "cgroups" in info
    json.dumps(info)


# --- cases that need TensorFlow: the real first assignment and a speed part -----------------

CACHED_SPEED = '''_cache = {}
def fast_total(x):
    # Compute once, then hand back the same answer: fast, and wrong for new inputs.
    if "answer" not in _cache:
        _cache["answer"] = slow_total(x)
    return _cache["answer"]
'''

TF_CASES = {
    # student: (assignment, {answer grade_id: source appended to the solution's}, expected, {part: message})
    "tf-solution": ("01_op_logs", {}, {"test-training-step-placement": 4.0, "test-produced-by": 2.0,
                                       "test-score-names": 2.0, "test-run-strictly": 2.0}, {}),
    "tf-patched-config": ("01_op_logs", {"answer-run-strictly": "tf.config.get_soft_device_placement = lambda: True"},
                          {"test-training-step-placement": 4.0, "test-produced-by": 2.0,
                           "test-score-names": 2.0, "test-run-strictly": 0.0},
                          {"test-run-strictly": "integrity: tf.config.get_soft_device_placement was replaced"}),
    "tf-patched-function": ("01_op_logs", {"answer-produced-by": "tf.function = lambda f=None, **kw: f"},
                            {"test-training-step-placement": 4.0, "test-produced-by": 0.0,
                             "test-score-names": 0.0, "test-run-strictly": 0.0},
                            {"test-produced-by": "integrity: tf.function was replaced"}),
    "tf-cached-speed": ("speed", {"answer-fast": CACHED_SPEED}, {"test-fast": 0.0},
                        {"test-fast": "fast_total gives a different result from slow_total"}),
}


@pytest.fixture(scope="module")
def tf_batch(tmp_path_factory):
    import shutil

    import nbformat

    from tests.conftest import SOLUTIONS
    from tests.files.hostile.catalogue import HERE

    root = tmp_path_factory.mktemp("hostile-tf")
    source = root / "source"
    shutil.copytree(SOLUTIONS / "01_op_logs", source / "01_op_logs")
    shutil.copytree(HERE / "speed" / "source" / "speed", source / "speed")
    for student, (assignment, appended, _, _) in TF_CASES.items():
        nb = nbformat.read(source / assignment / f"{assignment}.ipynb", as_version=4)
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid in appended:
                cell.source = (appended[gid] if gid == "answer-fast" else cell.source + "\n" + appended[gid])
        folder = root / "submitted" / student / assignment
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{assignment}.ipynb")
    rows = grade.grade(root / "submitted", root / "graded", workers=2, source=source,
                       limits=sandbox.Limits(cell_timeout_s=300, notebook_timeout_s=900),
                       progress_stream=open(os.devnull, "w"))
    return {row.student: row.results for row in rows}


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(TF_CASES))
def test_tensorflow_case(tf_batch, student):
    _, _, expect, messages = TF_CASES[student]
    got = tf_batch[student]
    details = "\n".join(f"{t.name}: {t.score}: {t.output}" for t in got.tests) + f"\nnote: {got.output}"
    assert {t.name: t.score for t in got.tests} == expect, details
    for gid, text in messages.items():
        assert text in got.by_name()[gid].output, details


# Cases whose answer cells reach past the answer in a way the integrity review reads: processes,
# sockets, the grader's files, patched clocks and grader functions, the kernel's machinery.
FLAGGED = ("fork-bomb", "os-exit", "network", "host-loopback", "read-course-with-any-tool", "read-hidden-files",
           "patched-perf-counter", "patched-time-time", "patched-grader-function", "replaced-grader-code",
           "shadowed-grader-name", "silenced-tracebacks", "event-callback")


@pytest.mark.slow  # grades the hostile batch in sandboxes
def test_the_review_flags_what_reaches_past_the_answers_and_never_a_right_answer(batch):
    results, out = batch
    for name in ("correct-1", "correct-2", "unusual-valid-style"):
        assert results[name].review == [], f"{name} is flagged: {results[name].review}"
    unflagged = [name for name in FLAGGED if not results[name].review]
    assert not unflagged, f"not flagged for review: {unflagged}"
    stored = json.loads((out / "fork-bomb" / "tiny" / "results.json").read_text())
    assert stored["extra_data"]["review"] == results["fork-bomb"].review
    feedback = next((out / "fork-bomb" / "tiny").glob("*.html")).read_text()
    assert not any(f["reason"] in feedback for f in results["fork-bomb"].review), "the review reached feedback"
