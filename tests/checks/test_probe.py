"""Probes: the requests the judge sends into the learner's kernel, run here in-process."""
from __future__ import annotations

import json

import numpy as np
import pytest

from autograder.checks import plain, probe


def _namespace():
    ns = {"np": np}
    exec("def double(x):\n    return 2 * np.asarray(x)\n"
         "def broken(x):\n    raise ValueError('bad input')\n"
         "def model():\n    return object()\n", ns)
    return ns


def test_call_and_run_return_plain_data_and_leave_the_namespace_alone():
    ns = _namespace()
    learner = probe.InKernelLearner(ns)
    out = learner.call("double", np.array([1.0, 2.0]))
    assert type(out) is np.ndarray and out.tolist() == [2.0, 4.0]
    assert learner.run("y = double(x)\nresult = {'sum': float(y.sum())}", x=np.ones(3)) == {"sum": 6.0}
    assert "y" not in ns and "x" not in ns and "result" not in ns


def test_an_error_in_the_learners_code_reaches_the_judge_as_learner_error():
    learner = probe.InKernelLearner(_namespace())
    with pytest.raises(probe.LearnerError) as info:
        learner.call("broken", 1)
    assert info.value.ename == "ValueError" and "bad input" in info.value.evalue
    with pytest.raises(probe.LearnerError) as info:
        learner.call("model")
    assert info.value.ename == "NotPlainData"


def test_timed_calls_return_outputs_and_a_positive_time():
    learner = probe.InKernelLearner(_namespace())
    seconds, outs = learner.function("double").timed_calls([(np.ones(2),), (np.zeros(2),)])
    assert seconds > 0 and [o.tolist() for o in outs] == [[2.0, 2.0], [0.0, 0.0]]


@pytest.mark.parametrize("text", [None, "[]", json.dumps({"ok": 5}), json.dumps({"error": {"type": 1}}),
                                  json.dumps({"ok": "{\"object\": 1}"})])
def test_a_forged_or_broken_response_is_a_learner_error_not_a_value(text):
    with pytest.raises(probe.LearnerError):
        probe.parse_response(text)


def test_a_response_decodes_strictly():
    assert probe.parse_response(json.dumps({"ok": plain.dumps((1, "a"))})) == (1, "a")


def test_judge_here_uses_the_judge_when_there_is_one(monkeypatch):
    seen = []
    probe.judge_here(lambda learner: seen.append(type(learner)), {})
    monkeypatch.setattr(probe, "JUDGE_LEARNER", probe.Learner())
    probe.judge_here(lambda learner: seen.append(type(learner)), {})
    assert seen == [probe.InKernelLearner, probe.Learner]


def _serve(monkeypatch, folder, request: bytes, digest: str | None = None) -> str:
    import hashlib

    import IPython

    class Shell:
        user_ns = _namespace()

    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell())
    (folder / "TOK.req").write_bytes(request)
    probe.serve("TOK", str(folder), digest or hashlib.sha256(request).hexdigest())
    assert not (folder / "TOK.req").exists() and not (folder / "TOK.tmp").exists()
    return (folder / "TOK.ans").read_text()


def test_serve_reads_the_request_file_and_writes_the_answer_file(monkeypatch, tmp_path):
    request = json.dumps({"op": "call", "code": "double", "args": plain.dumps(((3,), {}))}).encode()
    assert probe.parse_response(_serve(monkeypatch, tmp_path, request)).tolist() == 6


def test_serve_refuses_a_request_file_changed_after_the_worker_wrote_it(monkeypatch, tmp_path):
    request = json.dumps({"op": "call", "code": "double", "args": plain.dumps(((3,), {}))}).encode()
    with pytest.raises(probe.LearnerError, match="changed on its way"):
        probe.parse_response(_serve(monkeypatch, tmp_path, request, digest="0" * 64))


def test_serve_without_a_request_file_answers_an_error(monkeypatch, tmp_path):
    import IPython

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    probe.serve("TOK", str(tmp_path), "0" * 64)
    with pytest.raises(probe.LearnerError, match="could not be read"):
        probe.parse_response((tmp_path / "TOK.ans").read_text())
