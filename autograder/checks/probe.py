"""The judge's hand in the learner's kernel: probes that return plain data.

A hidden test is a function ``__ag_judge(learner)``.  When this grader grades,
it runs in the **judge**, a process of the grader's that the learner's kernel
cannot reach (:mod:`autograder.judge`); ``learner`` is then a remote
:class:`Learner` whose every request runs here, in the learner's kernel, as one
cell the sandbox worker sends and times from outside.  Under nbgrader's own
``autograde`` (no judge) the same function runs in the kernel with an
:class:`InKernelLearner`: same answers, in-kernel guarantee only.

What a request may do (:func:`handle`):

* ``call``: evaluate an expression in (a copy of) the learner's namespace --
  ``"fast_train_step"`` or ``"lambda ids: list(fast_pipeline(ids))"`` -- and call
  it with the judge's arguments;
* ``run``: run statements with the judge's inputs bound, and return the value
  they leave in ``result``;
* ``stage`` / ``staged``: keep a callable and argument sets here, then call it
  on one of them per request (how the judge times a call from outside).

Arguments and results cross as :mod:`autograder.checks.plain` data only: the
judge gets arrays, numbers, strings and containers it decodes itself, never an
object of the learner's.  Whatever this module reports is the learner's word
(the kernel is theirs); the judge compares it with its own references.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Any, Callable

from autograder.checks import plain

_STAGED: dict[str, tuple[Callable, list]] = {}
#: Set by the judge process: the remote learner every hidden test gets there.
JUDGE_LEARNER: "Learner | None" = None


class LearnerError(Exception):
    """The learner's code raised (or its kernel failed) while the judge asked something."""

    def __init__(self, ename: str, evalue: str) -> None:
        super().__init__(f"{ename}: {evalue}")
        self.ename, self.evalue = ename, evalue


def _namespace(user_ns: dict, inputs: dict) -> dict:
    namespace = dict(user_ns)
    namespace.update(inputs)
    return namespace


def _result(op: str, request: dict, user_ns: dict) -> Any:
    if op == "call":
        fn = eval(request["code"], _namespace(user_ns, {}))
        args, kwargs = plain.loads(request["args"], tensors=True)
        return fn(*args, **kwargs)
    if op == "run":
        namespace = _namespace(user_ns, plain.loads(request["args"], tensors=True))
        namespace.pop("result", None)
        exec(request["code"], namespace)
        return namespace.get("result")
    if op == "stage":
        fn = eval(request["code"], _namespace(user_ns, {}))
        for key in [k for k in _STAGED if k != "null"]:  # one staged set at a time (and the no-op)
            del _STAGED[key]
        _STAGED[request["key"]] = (fn, plain.loads(request["args"], tensors=True))
        return None
    if op == "staged":
        fn, arg_sets = _STAGED[request["key"]]
        return fn(*arg_sets[request["index"]])
    raise ValueError(f"unknown probe request {op!r}")


def handle(request_text: str, user_ns: dict) -> str:
    """One request (JSON) run against ``user_ns``; the response (JSON): ``{"ok": plain}`` or ``{"error": ...}``."""
    request = json.loads(request_text)
    try:
        value = _result(request["op"], request, user_ns)
        return json.dumps({"ok": plain.dumps(value)})
    except plain.NotPlain as exc:
        return json.dumps({"error": {"type": "NotPlainData", "message": str(exc)}})
    except BaseException as exc:  # the learner's code raised: the judge decides what that means
        if isinstance(exc, (SystemExit, KeyboardInterrupt)):
            return json.dumps({"error": {"type": exc.__class__.__name__, "message": "stopped"}})
        return json.dumps({"error": {"type": exc.__class__.__name__, "message": str(exc)[:2000]}})


def serve(token: str, folder: str, digest: str) -> None:
    """The cell the sandbox worker runs for one request.  The request is the file
    ``<folder>/<token>.req`` (a cell's source is no place for megabytes of arrays: the
    kernel parses it and echoes it back, about 0.3 ms a kilobyte), taken only if its
    SHA-256 is ``digest``; the response goes to ``<folder>/<token>.ans``, written whole
    (a temporary file renamed)."""
    from IPython import get_ipython

    base = os.path.join(folder, token)
    try:
        with open(base + ".req", "rb") as f:
            data = f.read()
        os.unlink(base + ".req")
    except OSError as exc:
        data, problem = b"", f"the request could not be read ({exc.__class__.__name__})"
    else:
        problem = "" if hashlib.sha256(data).hexdigest() == digest else "the request was changed on its way"
    if problem:
        answer = json.dumps({"error": {"type": "BadRequest", "message": problem}})
    else:
        answer = handle(data.decode("utf-8"), get_ipython().user_ns)
    with open(base + ".tmp", "w", encoding="utf-8") as f:
        f.write(answer)
    os.replace(base + ".tmp", base + ".ans")


def parse_response(text: Any) -> Any:
    """A response's value, decoded strictly; :class:`LearnerError` for an error response."""
    if type(text) is not str:
        raise LearnerError("NoAnswer", "the learner's kernel sent no answer")
    try:
        response = json.loads(text)
    except ValueError:
        raise LearnerError("BadAnswer", "the learner's kernel answered something that is not JSON") from None
    if type(response) is dict and set(response) == {"ok"} and type(response["ok"]) is str:
        try:
            return plain.loads(response["ok"])
        except plain.BadData as exc:
            raise LearnerError("BadAnswer", f"the answer is not plain data ({exc})") from None
    error = response.get("error") if type(response) is dict else None
    if type(error) is dict and type(error.get("type")) is str and type(error.get("message")) is str:
        raise LearnerError(error["type"][:100], error["message"][:2000])
    raise LearnerError("BadAnswer", "the learner's kernel answered in an unknown shape")


class Learner:
    """What a hidden test may ask of the learner's code (see the module docstring).

    Subclasses implement :meth:`_request`: send one request, return the
    response text and the wall time it took, measured by the asker."""

    def _request(self, request: dict) -> tuple[str, float]:
        raise NotImplementedError

    def _ask(self, op: str, code: str = "", args: Any = ((), {}), **fields: Any) -> tuple[Any, float]:
        text, seconds = self._request({"op": op, "code": code, "args": plain.dumps(args), **fields})
        return parse_response(text), seconds

    def call(self, expr: str, *args: Any, **kwargs: Any) -> Any:
        """``eval(expr)(*args, **kwargs)`` in the learner's namespace, as plain data."""
        return self._ask("call", expr, (tuple(args), dict(kwargs)))[0]

    def run(self, code: str, **inputs: Any) -> Any:
        """Run ``code`` in (a copy of) the learner's namespace with ``inputs`` bound; its ``result``."""
        return self._ask("run", code, dict(inputs))[0]

    def function(self, expr: str) -> "LearnerFunction":
        """A callable for ``expr`` in the learner's namespace that the timing checks time from outside."""
        return LearnerFunction(self, expr)

    def timed_calls(self, expr: str, arg_sets: list[tuple]) -> tuple[float, list[Any]]:
        """The fastest single call of ``expr`` over ``arg_sets`` and the outputs.

        Each call is one request; before each, a request that does nothing is timed the
        same way, and the fastest of those (this trial's round trip, measured side by side
        with the calls) is taken off the fastest call."""
        key = f"k{time.monotonic_ns()}"
        self._ask("stage", "lambda: None", [()], key="null")
        self._ask("stage", expr, [tuple(a) for a in arg_sets], key=key)
        best, best_null, outs = float("inf"), float("inf"), []
        for index in range(len(arg_sets)):
            best_null = min(best_null, self._ask("staged", key="null", index=0)[1])
            out, seconds = self._ask("staged", key=key, index=index)
            best = min(best, seconds)
            outs.append(out)
        return max(best - best_null, 1e-9), outs


class LearnerFunction:
    """``learner.function(expr)``: call it for plain outputs; ``timed_calls`` is timed from outside."""

    def __init__(self, learner: Learner, expr: str) -> None:
        self.learner, self.expr = learner, expr
        self.__name__ = expr

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.learner.call(self.expr, *args, **kwargs)

    def timed_calls(self, arg_sets: list[tuple]) -> tuple[float, list[Any]]:
        return self.learner.timed_calls(self.expr, arg_sets)


class InKernelLearner(Learner):
    """The learner in this very process (nbgrader's own autograde): same requests, no boundary."""

    def __init__(self, user_ns: dict) -> None:
        self.user_ns = user_ns

    def _request(self, request: dict) -> tuple[str, float]:
        start = time.perf_counter()
        text = handle(json.dumps(request), self.user_ns)
        return text, time.perf_counter() - start


def judge_here(judge: Callable[[Learner], Any], namespace: dict) -> None:
    """Run a hidden test's ``__ag_judge``: against the remote learner in the judge
    process, or against ``namespace`` when the test runs in the learner's own
    kernel (nbgrader's autograde)."""
    learner = JUDGE_LEARNER if JUDGE_LEARNER is not None else InKernelLearner(namespace)
    judge(learner)
