"""Checking an exported SavedModel the way a server would use it.

A SavedModel is only deployable if it works without the Python process that
wrote it: no Python objects, no closures, no ``tf.py_function`` callbacks, no
variables that live only in the exporter's memory.  So every function here
loads the model in a **fresh Python process** (``python -m
autograder.checks.savedmodel``), exchanging inputs and outputs through ``.npz`` files,
and reports what that process found:

* ``describe(export_dir)`` -- every signature's input and output specs;
* ``call_signature(export_dir, name, batches)`` -- call one signature on one or
  more input dicts (all in one process, so TensorFlow is imported once), through
  ``tf.saved_model.load`` (``"function"``) and/or the TF1 session loader
  (``"session"``) that ``saved_model_cli run`` uses, which reads the SavedModel
  the way TensorFlow Serving's C++ loader does: a graph, a session and the
  checkpoint's restore op, with no Python objects at all;
* ``assert_signature_spec``, ``assert_matches_reference`` and ``check_export``
  (both in one process) -- the checks the exercises use; they raise
  ``AssertionError`` with one line a learner can act on.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from autograder.checks import clean_subprocess, graph_guard

DEFAULT_TIMEOUT_S = 180.0
#: How a confined process that could not enter its private root begins its last line on stderr.
CONFINE_FAILED = "confined:"
LOADERS = ("function", "session")


@dataclass(frozen=True)
class TensorInfo:
    """One input or output of a signature: its key, dtype name and shape
    (``None`` for a dimension of any size; ``shape=None`` for unknown rank)."""

    name: str
    dtype: str
    shape: tuple[int | None, ...] | None

    def describe(self) -> str:
        shape = "unknown rank" if self.shape is None else "[" + ", ".join(
            "None" if d is None else str(d) for d in self.shape) + "]"
        return f"{self.name}: {self.dtype} {shape}"


@dataclass(frozen=True)
class SignatureInfo:
    """A signature's name and its inputs and outputs, keyed by name."""

    name: str
    inputs: dict[str, TensorInfo]
    outputs: dict[str, TensorInfo]

    def describe(self) -> str:
        ins = ", ".join(t.describe() for t in self.inputs.values()) or "no inputs"
        outs = ", ".join(t.describe() for t in self.outputs.values()) or "no outputs"
        return f"{self.name}({ins}) -> {{{outs}}}"


@dataclass
class SignatureRun:
    """What ``call_signature`` got back from the fresh process."""

    signature: SignatureInfo
    signatures: dict[str, SignatureInfo]
    outputs: list[dict[str, np.ndarray]] = field(default_factory=list)
    outputs_by_loader: dict[str, list[dict[str, np.ndarray]]] = field(default_factory=dict)


class SavedModelError(AssertionError):
    """The SavedModel could not be loaded or called in a fresh process.  An
    ``AssertionError`` so that a grading cell reports it as a failed check."""


# --- the parent side -----------------------------------------------------------


def _spawn(request: dict, batches: Sequence[Mapping[str, Any]], timeout_s: float, *, strict: bool = True) -> dict:
    """Run the worker in a fresh interpreter; return its parsed result.json.
    With ``strict=False`` a reported error is returned (as ``"error"``, with
    whatever signatures were read before it) instead of raised.

    The SavedModel's ops are checked first (:func:`graph_guard.refuse_unsafe_savedmodel`): one
    that reads or writes files, calls Python or reaches another process is refused before any
    process loads it.  In the judge the fresh process is also shut in a private root
    (:func:`autograder.isolation.confine`): it sees the export (read-only), its own folder, Python
    and the system folders, and nothing else of the machine."""
    from autograder.isolation import Confinement

    graph_guard.refuse_unsafe_savedmodel(request["export_dir"])
    with tempfile.TemporaryDirectory(prefix="savedmodel-check-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        for i, batch in enumerate(batches):
            if not isinstance(batch, Mapping):
                raise TypeError(f"each batch must be a dict from input name to array, got {type(batch).__name__}")
            np.savez(work / f"inputs_{i}.npz", **{k: np.asarray(v) for k, v in batch.items()})
        request = {"loaders": ["function"], **request, "n_batches": len(batches)}
        (work / "request.json").write_text(json.dumps(request))
        # The worker's own start-up noise is not the learner's.  Its environment,
        # interpreter and folder are clean: nothing the notebook planted runs first.
        env = clean_subprocess.clean_env({"TF_CPP_MIN_LOG_LEVEL": "2"})
        confinement = Confinement(root=str(Path(tmp) / "root"), writable=str(work),
                                  readonly=[request["export_dir"]])
        try:
            proc = clean_subprocess.run_module("autograder.checks.savedmodel", [str(work)], env=env,
                                               timeout=timeout_s, confine=confinement)
        except subprocess.TimeoutExpired:
            raise SavedModelError(
                f"loading and calling the SavedModel in a fresh process took over {timeout_s:g} s; "
                "is the exported function doing far more work than the model?"
            ) from None
        result_path = work / "result.json"
        if not result_path.exists():
            tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            if tail.startswith(CONFINE_FAILED):
                raise RuntimeError(f"the grader could not check the SavedModel: {tail}; grade on a machine "
                                   "that allows user namespaces (or as root)")
            status = "" if proc.returncode is None else f" (exit {proc.returncode})"
            raise SavedModelError(f"the fresh process that loads the SavedModel died{status}: {tail}")
        return _read_result(work, request, result_path, len(batches), strict)


def _read_result(work: Path, request: dict, result_path: Path, n_batches: int, strict: bool) -> dict:
    result = json.loads(result_path.read_text())
    if result.get("error"):
        if strict:
            raise SavedModelError(result["error"])
        return result
    result["outputs"] = {}
    result["outputs_also"] = {}
    for loader in request["loaders"] if request["signature"] else []:
        result["outputs"][loader] = []
        for i in range(n_batches):
            with np.load(work / f"outputs_{loader}_{i}.npz", allow_pickle=False) as data:
                result["outputs"][loader].append({k: data[k] for k in data.files})
        for j, other in enumerate(request.get("also", [])):
            outs = result["outputs_also"].setdefault(other, {}).setdefault(loader, [])
            for i in range(n_batches):
                if not (work / f"also{j}_{loader}_{i}.npz").exists():
                    break   # not called: missing, or other specs (check_export says which)
                with np.load(work / f"also{j}_{loader}_{i}.npz", allow_pickle=False) as data:
                    outs.append({k: data[k] for k in data.files})
    return result


def _signature_from_json(name: str, spec: dict) -> SignatureInfo:
    def tensors(d: dict) -> dict[str, TensorInfo]:
        return {k: TensorInfo(k, v["dtype"], None if v["shape"] is None else tuple(v["shape"])) for k, v in d.items()}

    return SignatureInfo(name, tensors(spec["inputs"]), tensors(spec["outputs"]))


def _check_dir(export_dir: str | os.PathLike) -> str:
    path = Path(export_dir)
    if not path.is_dir():
        raise SavedModelError(f"no directory at {str(path)!r}: export the model there first")
    if not (path / "saved_model.pb").exists():
        found = sorted(p.name for p in path.iterdir())[:6]
        hint = " (a .keras file is not a SavedModel: use model.export(dir) or tf.saved_model.save)" if any(
            f.endswith(".keras") for f in found) else ""
        raise SavedModelError(
            f"{str(path)!r} is not a SavedModel: it has no saved_model.pb (it holds {found or 'nothing'}){hint}"
        )
    return str(path.resolve())


def describe(export_dir: str | os.PathLike, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, SignatureInfo]:
    """Every signature of the SavedModel, as a fresh process sees it."""
    result = _spawn({"export_dir": _check_dir(export_dir), "signature": None}, [], timeout_s)
    return {name: _signature_from_json(name, spec) for name, spec in result["signatures"].items()}


def call_signature(
    export_dir: str | os.PathLike,
    signature: str,
    batches: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    *,
    loaders: Sequence[str] = ("function",),
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> SignatureRun:
    """Load the SavedModel in a fresh process and call ``signature`` once per
    input dict in ``batches`` (a single dict is one call), with each of
    ``loaders`` (``"function"``: ``tf.saved_model.load``; ``"session"``: the
    TF1 session loader, as ``saved_model_cli run`` and TF Serving load).
    Arrays are passed with the dtype they have; the signature decides whether
    it accepts them.  ``.outputs`` are the first loader's."""
    if isinstance(batches, Mapping):
        batches = [batches]
    unknown = set(loaders) - set(LOADERS)
    if unknown or not loaders:
        raise ValueError(f"loaders must be a non-empty subset of {LOADERS}, got {list(loaders)}")
    request = {"export_dir": _check_dir(export_dir), "signature": signature, "loaders": list(loaders)}
    result = _spawn(request, list(batches), timeout_s)
    signatures = {name: _signature_from_json(name, spec) for name, spec in result["signatures"].items()}
    by_loader = result["outputs"]
    return SignatureRun(signatures[signature], signatures, by_loader[loaders[0]], by_loader)


# --- checks ----------------------------------------------------------------------


def _shape_text(shape: Sequence[int | None] | None) -> str:
    if shape is None:
        return "unknown rank"
    return "[" + ", ".join("None" if d is None else str(d) for d in shape) + "]"


def _compare_tensors(kind: str, sig: SignatureInfo, actual: dict[str, TensorInfo],
                     expected: Mapping[str, tuple[str, Sequence[int | None] | None]]) -> None:
    if set(actual) != set(expected):
        raise AssertionError(
            f"signature {sig.name!r} has {kind} {sorted(actual)}, expected {sorted(expected)}; "
            f"the {kind} keys come from the TensorSpec names in input_signature"
            + (" and the keys of the dict the function returns" if kind == "outputs" else "")
            + f" (found: {sig.describe()})"
        )
    for key, (dtype, shape) in expected.items():
        got = actual[key]
        if got.dtype != str(dtype):
            raise AssertionError(f"{kind[:-1]} {key!r} of signature {sig.name!r} is {got.dtype}, expected {dtype}")
        if shape is not None and (got.shape is None or tuple(got.shape) != tuple(shape)):
            extra = ""
            if got.shape and shape and got.shape[0] is not None and shape[0] is None:
                extra = "; the batch dimension must be None so any batch size is accepted"
            raise AssertionError(
                f"{kind[:-1]} {key!r} of signature {sig.name!r} has shape {_shape_text(got.shape)}, "
                f"expected {_shape_text(shape)}{extra}"
            )


def assert_signature_spec(
    export_dir: str | os.PathLike,
    signature: str,
    *,
    inputs: Mapping[str, tuple[str, Sequence[int | None] | None]],
    outputs: Mapping[str, tuple[str, Sequence[int | None] | None]] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> SignatureInfo:
    """Check that ``signature`` exists and has exactly these inputs (and
    outputs, if given): ``{key: (dtype name, shape)}``; a shape of ``None``
    accepts any shape.  Returns the signature as found."""
    found = describe(export_dir, timeout_s=timeout_s)
    return check_spec(found, signature, inputs=inputs, outputs=outputs)


def check_spec(
    found: Mapping[str, SignatureInfo],
    signature: str,
    *,
    inputs: Mapping[str, tuple[str, Sequence[int | None] | None]],
    outputs: Mapping[str, tuple[str, Sequence[int | None] | None]] | None = None,
) -> SignatureInfo:
    """``assert_signature_spec`` on signatures already described."""
    if signature not in found:
        raise AssertionError(
            f"the SavedModel has no signature {signature!r}; it has {sorted(found) or 'none'}. "
            f"Pass signatures={{{signature!r}: ...}} to tf.saved_model.save"
        )
    sig = found[signature]
    _compare_tensors("inputs", sig, sig.inputs, inputs)
    if outputs is not None:
        _compare_tensors("outputs", sig, sig.outputs, outputs)
    return sig


def assert_matches_reference(
    export_dir: str | os.PathLike,
    signature: str,
    reference: Callable[[dict[str, np.ndarray]], Mapping[str, Any]],
    batches: Sequence[Mapping[str, np.ndarray]],
    *,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    loaders: Sequence[str] = ("function",),
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> SignatureRun:
    """Call ``signature`` in a fresh process on every batch (with each of
    ``loaders``) and compare each output key with ``reference(batch)`` (a dict
    of arrays, computed here).  Raises ``AssertionError`` naming the batch
    size, the key and the error."""
    from autograder.checks.timing import compare_outputs

    run = call_signature(export_dir, signature, batches, loaders=loaders, timeout_s=timeout_s)
    _compare_run(run, signature, reference, batches, rtol, atol, compare_outputs)
    return run


def check_export(
    export_dir: str | os.PathLike,
    signature: str,
    *,
    inputs: Mapping[str, tuple[str, Sequence[int | None] | None]],
    outputs: Mapping[str, tuple[str, Sequence[int | None] | None]] | None,
    reference: Callable[[dict[str, np.ndarray]], Mapping[str, Any]],
    batches: Sequence[Mapping[str, np.ndarray]],
    rtol: float = 1e-5,
    atol: float = 1e-5,
    loaders: Sequence[str] = LOADERS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    also: Sequence[str] = (),
) -> SignatureRun:
    """The whole deployment check in one fresh process: the signature's specs
    (checked first, so a wrong spec is reported as such), then every batch
    through every loader compared with ``reference``.

    ``also`` names further signatures that must be the same function: the same
    specs, and the same outputs (compared with ``reference`` on every batch,
    through every loader)."""
    from autograder.checks.timing import compare_outputs

    also = [name for name in also if name != signature]
    request = {"export_dir": _check_dir(export_dir), "signature": signature, "loaders": list(loaders),
               "also": also}
    result = _spawn(request, list(batches), timeout_s, strict=False)
    signatures = {name: _signature_from_json(name, spec) for name, spec in result["signatures"].items()}
    if result.get("error") and not signatures:
        raise SavedModelError(result["error"])
    sig = check_spec(signatures, signature, inputs=inputs, outputs=outputs)
    for other in also:
        if other not in signatures:
            raise AssertionError(
                f"the SavedModel has signatures {sorted(signatures)}; register the same function as "
                f"{other!r} too (signatures={{{signature!r}: f, {other!r}: f}})")
        found = signatures[other]
        if found.inputs != sig.inputs or found.outputs != sig.outputs:
            raise AssertionError(
                f"{other!r} is {found.describe()}, but {signature!r} is {sig.describe()}; "
                "register the same function under both names")
    if result.get("error"):
        raise SavedModelError(result["error"])
    run = SignatureRun(sig, signatures, result["outputs"][loaders[0]], result["outputs"])
    _compare_run(run, signature, reference, batches, rtol, atol, compare_outputs)
    for other in also:
        other_run = SignatureRun(signatures[other], signatures, [], result["outputs_also"][other])
        _compare_run(other_run, other, reference, batches, rtol, atol, compare_outputs,
                     hint=f" ({other!r} must be the same function as {signature!r})")
    return run


def _compare_run(run: SignatureRun, signature: str, reference: Callable, batches: Sequence[Mapping[str, Any]],
                 rtol: float, atol: float, compare_outputs: Callable, hint: str = "") -> None:
    pairs = [(batch, got) for outputs in run.outputs_by_loader.values() for batch, got in zip(batches, outputs)]
    for batch, got in pairs:
        size = len(next(iter(batch.values()))) if batch else 0
        expected = {k: np.asarray(v) for k, v in reference(dict(batch)).items()}
        missing = sorted(set(expected) - set(got))
        if missing:
            raise AssertionError(
                f"signature {signature!r} returned keys {sorted(got)}, expected {sorted(expected)}: "
                f"return a dict with those keys from the exported function{hint}"
            )
        for key in sorted(expected):
            problem = compare_outputs(expected[key], got[key], rtol=rtol, atol=atol)
            if problem:
                raise AssertionError(
                    f"on a batch of {size}, output {key!r} of the reloaded signature {signature!r} "
                    f"differs from the original model: {problem.replace('output', key, 1)}{hint}"
                )


# --- the fresh-process side --------------------------------------------------------


def _spec_json(spec: Any) -> dict:
    shape = None if spec.shape.rank is None else list(spec.shape.as_list())
    return {"dtype": spec.dtype.name, "shape": shape}


def _worker(work: Path) -> None:
    """Load, describe, call; write result.json (and outputs_i.npz).  Every
    failure becomes an ``error`` line for the parent, never a traceback."""
    request = json.loads((work / "request.json").read_text())
    result: dict[str, Any] = {"error": None, "signatures": {}}

    def finish() -> None:
        (work / "result.json").write_text(json.dumps(result))

    import tensorflow as tf

    try:
        loaded = tf.saved_model.load(request["export_dir"])
    except Exception as exc:  # any load failure is the learner's to fix
        result["error"] = f"tf.saved_model.load failed in a fresh process: {type(exc).__name__}: {_first_line(exc)}"
        return finish()
    for name, fn in loaded.signatures.items():
        _, kwargs = fn.structured_input_signature
        outputs = fn.structured_outputs
        result["signatures"][name] = {
            "inputs": {k: _spec_json(v) for k, v in kwargs.items()},
            "outputs": {k: _spec_json(v) for k, v in outputs.items()},
        }
    name = request["signature"]
    if name is None:
        return finish()
    if name not in loaded.signatures:
        result["error"] = (
            f"the SavedModel has no signature {name!r}; it has {sorted(loaded.signatures) or 'none'}. "
            f"Pass signatures={{{name!r}: ...}} to tf.saved_model.save"
        )
        return finish()
    also = request.get("also", [])
    fn = loaded.signatures[name]
    feeds = []
    for i in range(request["n_batches"]):
        with np.load(work / f"inputs_{i}.npz", allow_pickle=False) as data:
            feeds.append({k: data[k] for k in data.files})
        mismatch = _feed_mismatch(name, fn.structured_input_signature[1], feeds[-1])
        if mismatch:
            result["error"] = mismatch
            return finish()
    # The main signature, then the ones that must be the same function (a
    # missing one, or one with other specs, is left to the parent to report).
    targets = [(name, "outputs_{loader}_{i}.npz")] + [
        (other, f"also{j}_{{loader}}_{{i}}.npz") for j, other in enumerate(also)
        if other in loaded.signatures
        and not _feed_mismatch(other, loaded.signatures[other].structured_input_signature[1], feeds[0])]
    for loader, (sig_name, pattern) in [(ld, t) for ld in request["loaders"] for t in targets]:
        call = (_function_caller(loaded.signatures[sig_name]) if loader == "function"
                else _session_caller(request["export_dir"], sig_name))
        for i, feed in enumerate(feeds):
            try:
                out = call(feed)
            except Exception as exc:  # a failing call is reported, never a crash
                shapes = ", ".join(f"{k}: {v.dtype.name} {list(v.shape)}" for k, v in feed.items())
                how = ("tf.saved_model.load" if loader == "function"
                       else "the session loader (saved_model_cli run's path, like TF Serving's C++ loader)")
                result["error"] = (
                    f"calling signature {sig_name!r} of the SavedModel reloaded with {how}, on {{{shapes}}}, "
                    f"failed: {type(exc).__name__}: {_first_line(exc)}"
                )
                if loader == "session" and "Could not find variable" in str(exc):
                    result["error"] += (
                        " Hint: tf.saved_model.save of an object holding a Keras 3 model saves the variables "
                        "through Keras wrappers this loader cannot find; export with model.export(...) or "
                        "keras.export.ExportArchive, or also track the tf.Variables themselves "
                        "(e.g. module.weights = [v.value for v in model.variables])."
                    )
                return finish()
            np.savez(work / pattern.format(loader=loader, i=i), **out)
    finish()


def _function_caller(fn: Any) -> Callable[[dict], dict]:
    import tensorflow as tf

    return lambda feed: {k: v.numpy() for k, v in fn(**{k: tf.constant(a) for k, a in feed.items()}).items()}


def _session_caller(export_dir: str, name: str) -> Callable[[dict], dict]:
    """Call a signature the TF1 way: import the MetaGraph into a fresh graph,
    run the restore op in a session, feed and fetch the signature's tensor
    names.  Nothing of the exporter's Python survives this path."""
    import tensorflow as tf

    graph = tf.Graph()
    session = tf.compat.v1.Session(graph=graph)
    with graph.as_default():
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
    sig = meta.signature_def[name]

    def call(feed: dict) -> dict:
        fetches = {k: v.name for k, v in sig.outputs.items()}
        return session.run(fetches, {sig.inputs[k].name: a for k, a in feed.items()})

    return call


def _feed_mismatch(name: str, specs: dict, feed: dict) -> str | None:
    """Why ``feed`` does not fit the signature's specs, in words, or None.
    Checked before calling because TensorFlow's own errors for this are
    multi-line graph-execution reports."""
    if set(feed) != set(specs):
        return (f"signature {name!r} takes inputs {sorted(specs)}, but the check feeds {sorted(feed)}: "
                "name the TensorSpec in input_signature after the input (TensorSpec(..., name=...))")
    for key, spec in specs.items():
        value = feed[key]
        if value.dtype != spec.dtype.as_numpy_dtype:
            return (f"input {key!r} of signature {name!r} expects {spec.dtype.name}, "
                    f"the check feeds {value.dtype}")
        if not spec.shape.is_compatible_with(value.shape):
            batch_only = (spec.shape.rank == len(value.shape) and spec.shape.rank > 0
                          and spec.shape[1:].is_compatible_with(value.shape[1:]))
            hint = "; use None for the batch dimension" if batch_only else ""
            return (f"input {key!r} of signature {name!r} has shape {spec.shape}, which does not accept "
                    f"an input of shape {list(value.shape)}{hint}")
    return None


def _first_line(exc: BaseException) -> str:
    return error_summary(exc)


def error_summary(exc: BaseException) -> str:
    """One line from a TensorFlow error.  A graph execution error's first line
    is just "Graph execution error:"; the node and the cause are further down."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    if lines[0].startswith("Graph execution error"):
        node = next((m.group(1) for m in map(_NODE.search, lines) if m), None)
        cause = next((line for line in lines[1:] if _CAUSE.match(line)), None)
        if cause is None:
            cause = next((line for line in lines[1:] if not line.startswith(("Detected at", "<stack", "File", "["))),
                         lines[0])
        return (f"at node {node}: " if node else "") + cause[:500]
    return lines[0][:500]


_NODE = re.compile(r"Detected at node '?([\w/.-]+)'?")
_CAUSE = re.compile(r"^[A-Z]\w*(Error|Exception): ")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m autograder.checks.savedmodel WORKDIR (used by autograder.checks.savedmodel itself)")
    _worker(Path(sys.argv[1]))
