"""A judged part, seen from the grader: the judge runs its hidden test, its probes go to the worker.

:func:`judge_part` hands the part to the judge process (:mod:`autograder.judge.client`) and
relays each probe it asks to the sandbox worker, which runs it in the learner's kernel;
:func:`checked_after` reads the worker's integrity finding once the part is over.  What
the part scores is decided by :func:`autograder.sandbox.verdict.decide`.
"""
from __future__ import annotations

import queue
import subprocess
import time

from autograder.sandbox import startup, verdict
from autograder.results.results import TestResult
from autograder.judge import client as judge_client
from autograder.judge import protocol


def checked_after(lines: queue.Queue, deadline: float) -> list[str]:
    """The worker's integrity finding after a judged part (its next message must be Checked)."""
    try:
        line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
    except queue.Empty:
        return ["the kernel did not answer the integrity check after this part"]
    if line is None:
        lines.put(None)
        return ["the sandbox stopped before the integrity check after this part"]
    try:
        return protocol.decode(line, protocol.Checked).problems
    except protocol.ProtocolError:
        return ["the sandbox answered out of turn after this part"]


def write(proc: subprocess.Popen, line: str) -> None:
    proc.stdin.write(line.encode())
    proc.stdin.flush()


def submission_digest(prepared) -> str:
    """What names a submission's code for the judge's draws: a digest of every cell it runs, in
    order (the restored cells are the same for everyone, so it changes with the answers only).
    The same notebook gets the same hidden inputs at every regrade."""
    import hashlib

    digest = hashlib.sha256()
    for cell in prepared.cells:
        digest.update(cell.get("source", "").encode("utf-8", "replace"))
        digest.update(b"\0")
    return digest.hexdigest()


class _WorkerGone(Exception):
    """The worker stopped (or sent something else) while the judge waited for a probe."""


def judge_part(proc: subprocess.Popen, lines: queue.Queue, prepared, test, judge: judge_client.Judge,
               deadline: float) -> TestResult:
    """Have the judge run one part's hidden test, relaying its probes to the worker."""
    points = next((p.points for p in prepared.parts if p.grade_id == test.grade_id), 0.0)

    def relay(probe: protocol.Probe) -> protocol.ProbeResult:
        write(proc, protocol.encode(probe))
        line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        if line is None:
            lines.put(None)  # the conversation's own loop must see the end too
            raise _WorkerGone("the sandbox stopped")
        try:
            return protocol.decode(line, protocol.ProbeResult)
        except protocol.ProtocolError:
            raise _WorkerGone("the sandbox answered out of turn") from None

    if test.pending:
        return verdict.decide(test.grade_id, points, pending=test.pending)
    try:
        if judge.locked_errors is None:  # a judge's first part waits for its start: the grader's, not the learner's
            with startup.charged():
                judge.wait_ready(deadline)
        found = judge.judge(test.grade_id, prepared.judged[test.grade_id], relay, deadline,
                            submission=submission_digest(prepared))
    except (TimeoutError, queue.Empty):
        return verdict.decide(test.grade_id, points, failure="the notebook's time ran out while this part was judged")
    except _WorkerGone as exc:
        return verdict.decide(test.grade_id, points, failure=f"{exc} while this part was judged")
    except judge_client.JudgeFailed as exc:
        return verdict.decide(test.grade_id, points, failure=(
            f"the grader's judge failed on this part ({exc}); grade again, and tell the course maintainers "
            "if it keeps failing"))
    return verdict.decide(test.grade_id, points, verdict=found)
