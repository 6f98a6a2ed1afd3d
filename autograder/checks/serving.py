"""A small server that speaks TensorFlow Serving's REST API, for the book.

TensorFlow Serving (``tensorflow/serving``, a C++ server shipped as a Docker
image) is what a production deployment runs.  The book cannot start Docker, so
this module serves a SavedModel's signatures over the same REST API with
starlette + uvicorn, bound to 127.0.0.1 only.  A client written against TF
Serving works against it unchanged:

* ``GET  /v1/models/<name>``            -- model status (``model_version_status``);
* ``GET  /v1/models/<name>/metadata``   -- the signatures (``signature_def``);
* ``POST /v1/models/<name>:predict``    -- ``{"instances": [...]}`` (row format)
  answered with ``{"predictions": [...]}``, or ``{"inputs": ...}`` (columnar)
  answered with ``{"outputs": ...}``; ``"signature_name"`` picks a signature
  (default ``serving_default``).

Every malformed request gets TF Serving's error shape, ``{"error": "..."}``
with status 400 (404 for an unknown model or path), never a crash.  The
``/versions/<v>`` form, ``:classify``/``:regress`` and ``{"b64": ...}`` binary
inputs are not implemented and say so.

``start_server(export_dir)`` runs the server in a background process on a free
port and returns a handle with ``.url`` and ``.stop()`` (also a context manager).
"""
from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from autograder.checks import clean_subprocess

HOST = "127.0.0.1"  # never another interface: this server has no authentication
DEFAULT_SIGNATURE = "serving_default"
VERSION = "1"


class RequestError(Exception):
    """A request the server refuses; becomes ``{"error": message}``."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


# --- request -> tensors -> response (no HTTP here, so it is easy to test) ----------


def _spec_summary(spec: Any) -> str:
    dims = "unknown rank" if spec.shape.rank is None else str([d for d in spec.shape.as_list()]).replace("None", "-1")
    return f"{spec.dtype.name} {dims}"


def _to_array(key: str, value: Any, spec: Any) -> np.ndarray:
    """JSON value -> NumPy array of the spec's dtype, refusing lossy or ragged input."""
    if isinstance(value, dict) and "b64" in value:
        raise RequestError(f"input {key!r}: binary {{\"b64\": ...}} values are not supported by this server")
    dtype = spec.dtype
    try:
        if dtype.name == "string":
            arr = np.asarray(value, dtype=object)
            if arr.size and not all(isinstance(v, str) for v in arr.ravel()):
                raise ValueError("expected strings")
            arr = arr.astype(bytes) if arr.size else arr
        else:
            arr = np.asarray(value)
            if arr.dtype == object or arr.dtype.kind in "USV":
                raise ValueError("expected numbers")
            target = np.dtype(dtype.as_numpy_dtype)
            if target.kind in "iu" and arr.dtype.kind == "f" and not np.all(np.mod(arr, 1) == 0):
                raise ValueError(f"non-integer values for an {dtype.name} input")
            if target.kind == "b" and arr.dtype.kind != "b":
                raise ValueError("expected true/false")
            arr = arr.astype(target)
    except (ValueError, TypeError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else "cannot convert"
        if "inhomogeneous" in detail or "sequence" in detail:
            detail = "the nested lists are ragged (rows of different lengths)"
        raise RequestError(f"input {key!r} does not fit {_spec_summary(spec)}: {detail}") from None
    if not spec.shape.is_compatible_with(arr.shape):
        raise RequestError(
            f"input {key!r} has shape {list(arr.shape)}, the signature expects {_spec_summary(spec)}"
        )
    return arr


def parse_request(body: Any, specs: dict[str, Any]) -> tuple[str, dict[str, np.ndarray]]:
    """Turn a predict request body into ``("row"|"columnar", {input: array})``
    for a signature whose inputs are ``specs`` (name -> ``tf.TensorSpec``)."""
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    has_rows, has_cols = "instances" in body, "inputs" in body
    if has_rows == has_cols:
        raise RequestError("Missing 'inputs' or 'instances' key" if not has_rows
                           else "Not both 'instances' and 'inputs' can be specified in the same request")
    names = sorted(specs)
    if has_rows:
        rows = body["instances"]
        if not isinstance(rows, list) or not rows:
            raise RequestError("'instances' must be a non-empty list, one element per example")
        if len(names) == 1 and not all(isinstance(r, dict) and set(r) == set(names) for r in rows):
            columns = {names[0]: rows}
        else:
            for i, row in enumerate(rows):
                if not isinstance(row, dict) or set(row) != set(names):
                    got = sorted(row) if isinstance(row, dict) else type(row).__name__
                    raise RequestError(f"instance {i} must be an object with keys {names}, got {got}")
            columns = {k: [row[k] for row in rows] for k in names}
        return "row", {k: _to_array(k, v, specs[k]) for k, v in columns.items()}
    cols = body["inputs"]
    if isinstance(cols, dict) and not (len(names) == 1 and "b64" in cols):
        if set(cols) != set(names):
            raise RequestError(f"'inputs' must have keys {names}, got {sorted(cols)}")
        return "columnar", {k: _to_array(k, cols[k], specs[k]) for k in names}
    if len(names) != 1:
        raise RequestError(f"this signature has several inputs {names}: 'inputs' must be an object with those keys")
    return "columnar", {names[0]: _to_array(names[0], cols, specs[names[0]])}


def _json_value(arr: np.ndarray) -> Any:
    if arr.dtype == object or arr.dtype.kind == "S":
        return np.vectorize(lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else b,
                            otypes=[object])(arr).tolist()
    return arr.tolist()


def format_response(fmt: str, outputs: dict[str, np.ndarray]) -> dict:
    """``{"predictions": ...}`` for the row format, ``{"outputs": ...}`` for the
    columnar one; a single output is given bare, several as an object, as TF
    Serving does."""
    keys = sorted(outputs)
    if fmt == "columnar":
        if len(keys) == 1:
            return {"outputs": _json_value(outputs[keys[0]])}
        return {"outputs": {k: _json_value(outputs[k]) for k in keys}}
    sizes = {k: (outputs[k].shape[0] if outputs[k].ndim else None) for k in keys}
    if len(set(sizes.values())) != 1 or None in sizes.values():
        raise RequestError(
            f"the outputs {sizes} do not share a batch dimension, so they cannot be split into rows; "
            "use the columnar format ('inputs')"
        )
    if len(keys) == 1:
        return {"predictions": _json_value(outputs[keys[0]])}
    columns = {k: _json_value(outputs[k]) for k in keys}
    n = sizes[keys[0]]
    return {"predictions": [{k: columns[k][i] for k in keys} for i in range(n)]}


# --- the model and the HTTP app ----------------------------------------------------------


@dataclass
class ServedModel:
    """A loaded SavedModel and its signatures."""

    name: str
    export_dir: str
    loaded: Any = field(repr=False)

    @classmethod
    def load(cls, export_dir: str | os.PathLike, name: str) -> "ServedModel":
        import tensorflow as tf

        return cls(name, str(export_dir), tf.saved_model.load(str(export_dir)))

    @property
    def signatures(self) -> dict[str, Any]:
        return dict(self.loaded.signatures)

    def predict(self, body: Any) -> dict:
        import tensorflow as tf

        if not isinstance(body, dict):
            raise RequestError("the request body must be a JSON object")
        sig_name = body.get("signature_name", DEFAULT_SIGNATURE)
        sigs = self.signatures
        if not isinstance(sig_name, str) or sig_name not in sigs:
            raise RequestError(f'Serving signature key "{sig_name}" not found. Available: {sorted(sigs)}')
        fn = sigs[sig_name]
        fmt, feed = parse_request(body, fn.structured_input_signature[1])
        try:
            out = fn(**{k: tf.constant(v) for k, v in feed.items()})
        except (tf.errors.InvalidArgumentError, ValueError, TypeError) as exc:
            from autograder.checks.savedmodel import error_summary

            raise RequestError(error_summary(exc)) from None
        return format_response(fmt, {k: v.numpy() for k, v in out.items()})

    def status(self) -> dict:
        return {"model_version_status": [
            {"version": VERSION, "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}
        ]}

    def metadata(self) -> dict:
        def tensor(spec: Any) -> dict:
            dims = [] if spec.shape.rank is None else [{"size": str(-1 if d is None else d), "name": ""}
                                                        for d in spec.shape.as_list()]
            return {"dtype": "DT_" + spec.dtype.name.upper().replace("FLOAT32", "FLOAT").replace("FLOAT64", "DOUBLE"),
                    "tensor_shape": {"dim": dims, "unknown_rank": spec.shape.rank is None},
                    "name": spec.name or ""}

        defs = {}
        for key, fn in self.signatures.items():
            defs[key] = {
                "inputs": {k: tensor(s) for k, s in fn.structured_input_signature[1].items()},
                "outputs": {k: tensor(s) for k, s in fn.structured_outputs.items()},
                "method_name": "tensorflow/serving/predict",
            }
        return {"model_spec": {"name": self.name, "signature_name": "", "version": VERSION},
                "metadata": {"signature_def": {"signature_def": defs}}}


def build_app(model: ServedModel):
    """The starlette app serving ``model`` under ``/v1/models/<model.name>``."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    def reply(payload: dict, status: int = 200) -> Response:
        # TF Serving writes NaN and Infinity as bare words; json.dumps does too
        # (starlette's JSONResponse would raise on them instead).
        return Response(json.dumps(payload, allow_nan=True), status_code=status, media_type="application/json")

    def not_found(path: str) -> Response:
        return reply({"error": f"Malformed request: {path}"}, 404)

    async def models(request: Request) -> Response:
        rest = request.path_params["rest"]
        method = request.method
        try:
            if "/versions/" in rest or "/labels/" in rest:
                raise RequestError(f"this server serves one version of one model at /v1/models/{model.name}; "
                                   "/versions/ and /labels/ are not implemented", 404)
            if method == "POST" and rest.endswith(":predict"):
                name = rest[: -len(":predict")]
                if "/" in name:
                    raise RequestError(f"only /v1/models/<name>:predict is supported, not /v1/models/{rest}", 404)
                if name != model.name:
                    raise RequestError(f"Servable not found for request: Latest({name})", 404)
                raw = await request.body()
                try:
                    body = json.loads(raw)
                except (ValueError, UnicodeDecodeError) as exc:
                    raise RequestError(f"JSON Parse error: {exc}") from None
                # TensorFlow runs in a worker thread so the event loop keeps answering.
                from starlette.concurrency import run_in_threadpool

                return reply(await run_in_threadpool(model.predict, body))
            if method == "GET" and rest in (model.name, model.name + "/metadata"):
                return reply(model.metadata() if rest.endswith("/metadata") else model.status())
            if method == "GET" and "/" not in rest and ":" not in rest:
                raise RequestError(f"Servable not found for request: Latest({rest})", 404)
            if method == "POST" and rest.endswith((":classify", ":regress")):
                raise RequestError("this server implements only :predict (TF Serving also has "
                                   ":classify and :regress, for tf.Example inputs)", 404)
            return not_found(f"{method} /v1/models/{rest}")
        except RequestError as exc:
            return reply({"error": str(exc)}, exc.status)
        except Exception as exc:  # a server must answer, whatever went wrong
            return reply({"error": f"{type(exc).__name__}: {exc}"}, 500)

    async def anything_else(request: Request) -> Response:
        return not_found(f"{request.method} {request.url.path}")

    return Starlette(routes=[
        Route("/v1/models/{rest:path}", models, methods=["GET", "POST"]),
        Route("/{other:path}", anything_else, methods=["GET", "POST", "PUT", "DELETE"]),
    ])


# --- running it in the background --------------------------------------------------------


@dataclass
class ServerHandle:
    """A server started by ``start_server``; stop it with ``.stop()``."""

    model_name: str
    port: int
    process: subprocess.Popen = field(repr=False)
    log_path: Path = field(repr=False)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def predict_url(self) -> str:
        return f"{self.url}/v1/models/{self.model_name}:predict"

    def running(self) -> bool:
        return self.process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, timeout_s: float = 10.0) -> int:
        """Stop the server process (SIGTERM, then SIGKILL); return its exit code."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout_s)
        _RUNNING.discard(self)
        return self.process.returncode

    def __enter__(self) -> "ServerHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __hash__(self) -> int:
        return id(self)


_RUNNING: set[ServerHandle] = set()


@atexit.register
def _stop_all() -> None:
    for handle in list(_RUNNING):
        handle.stop()


class ServerStartError(RuntimeError):
    """The server process exited or did not come up in time."""


def start_server(export_dir: str | os.PathLike, model_name: str = "model", *,
                 startup_timeout_s: float = 120.0) -> ServerHandle:
    """Serve ``export_dir`` as ``model_name`` from a background process on a
    free port of 127.0.0.1; return once the status endpoint answers."""
    export_dir = Path(export_dir)
    if not (export_dir / "saved_model.pb").exists():
        raise ServerStartError(f"{str(export_dir)!r} is not a SavedModel directory (no saved_model.pb)")
    if not model_name or "/" in model_name or ":" in model_name:
        raise ServerStartError(f"model name {model_name!r} must be non-empty without '/' or ':'")
    work = Path(tempfile.mkdtemp(prefix="serving-"))
    port_file, log_path = work / "port", work / "server.log"
    # A clean, isolated interpreter: nothing the notebook planted runs in the server.
    env = clean_subprocess.clean_env({"TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2")})
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            clean_subprocess.python_argv("autograder", [
                "serve", "--model-dir", str(export_dir.resolve()), "--model-name", model_name,
                "--port", "0", "--port-file", str(port_file)], options=["-u"]),
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=clean_subprocess.NEUTRAL_CWD,
        )
    handle: ServerHandle | None = None
    deadline = time.monotonic() + startup_timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = "\n".join(log_path.read_text(errors="replace").strip().splitlines()[-3:])
            raise ServerStartError(f"the server process exited with code {process.returncode}: {tail}")
        if handle is None and port_file.exists():
            handle = ServerHandle(model_name, int(port_file.read_text()), process, log_path)
            _RUNNING.add(handle)
        if handle is not None:
            try:
                with urllib.request.urlopen(f"{handle.url}/v1/models/{model_name}", timeout=2) as resp:
                    if resp.status == 200:
                        return handle
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
        time.sleep(0.1)
    process.kill()
    process.wait()
    raise ServerStartError(f"the server did not answer within {startup_timeout_s:g} s; log: {log_path}")


def serve(export_dir: str, model_name: str, port_file: str | None = None, port: int = 0) -> None:
    """Load the model, bind 127.0.0.1 (port 0: any free port), write the port to
    ``port_file`` and serve until terminated."""
    import uvicorn

    model = ServedModel.load(export_dir, model_name)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    if port_file:
        from autograder.atomic import write_atomic

        write_atomic(port_file, str(sock.getsockname()[1]))  # the parent never reads half a number
    config = uvicorn.Config(build_app(model), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
