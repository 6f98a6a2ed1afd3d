"""autograder.checks.serving: TF Serving's REST format, and the server speaking it."""
from __future__ import annotations

import json

import httpx
import numpy as np
import pytest

from autograder.checks import serving
from autograder.checks.serving import RequestError, format_response, parse_request


tf = pytest.importorskip("tensorflow")

W = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0
ONE = {"features": tf.TensorSpec([None, 4], tf.float32, name="features")}
TWO = {"a": tf.TensorSpec([None, 2], tf.float32), "ids": tf.TensorSpec([None], tf.int64)}


class Classifier(tf.Module):
    def __init__(self):
        self.w = tf.Variable(W)

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="features")])
    def classify(self, features):
        logits = tf.matmul(features, self.w)
        return {"scores": logits, "label": tf.argmax(logits, -1)}

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="features")])
    def scores(self, features):
        return {"scores": tf.matmul(features, self.w)}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path = tmp_path_factory.mktemp("serving") / "clf"
    module = Classifier()
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.scores, "classify": module.classify})
    return path


@pytest.fixture(scope="module")
def server(exported):
    with serving.start_server(exported, "clf") as handle:
        yield handle


# --- the format, without HTTP --------------------------------------------------------


def test_row_format_single_input_bare_or_named():
    fmt, feed = parse_request({"instances": [[1, 2, 3, 4], [5, 6, 7, 8]]}, ONE)
    assert fmt == "row" and feed["features"].dtype == np.float32 and feed["features"].shape == (2, 4)
    _, named = parse_request({"instances": [{"features": [1, 2, 3, 4]}]}, ONE)
    assert named["features"].shape == (1, 4)


def test_columnar_format_single_and_several_inputs():
    fmt, feed = parse_request({"inputs": [[1, 2, 3, 4]]}, ONE)
    assert fmt == "columnar" and feed["features"].shape == (1, 4)
    _, feed = parse_request({"inputs": {"a": [[1, 2]], "ids": [7]}}, TWO)
    assert feed["ids"].dtype == np.int64 and feed["a"].shape == (1, 2)
    _, feed = parse_request({"instances": [{"a": [1, 2], "ids": 3}, {"a": [3, 4], "ids": 4}]}, TWO)
    assert feed["ids"].tolist() == [3, 4]


@pytest.mark.parametrize("body,message", [
    ([1, 2], "must be a JSON object"),
    ({}, "Missing 'inputs' or 'instances' key"),
    ({"inputs": [[1, 2, 3, 4]], "instances": [[1, 2, 3, 4]]}, "Not both"),
    ({"instances": []}, "non-empty list"),
    ({"instances": [[1, 2, 3]]}, "shape [1, 3], the signature expects float32 [-1, 4]"),
    ({"instances": [[1, 2, 3, 4], [1, 2]]}, "ragged"),
    ({"instances": [["a", "b", "c", "d"]]}, "expected numbers"),
    ({"inputs": {"feature": [[1, 2, 3, 4]]}}, "'inputs' must have keys ['features']"),
    ({"inputs": {"b64": "AAAA"}}, "b64"),
])
def test_malformed_requests_are_refused_with_a_reason(body, message):
    with pytest.raises(RequestError) as info:
        parse_request(body, ONE)
    assert message in str(info.value) and info.value.status == 400


def test_several_inputs_and_integer_checks():
    with pytest.raises(RequestError, match=r"instance 1 must be an object with keys \['a', 'ids'\]"):
        parse_request({"instances": [{"a": [1, 2], "ids": 3}, [1, 2]]}, TWO)
    with pytest.raises(RequestError, match="non-integer values for an int64 input"):
        parse_request({"inputs": {"a": [[1, 2]], "ids": [1.5]}}, TWO)
    with pytest.raises(RequestError, match="several inputs"):
        parse_request({"inputs": [[1, 2]]}, TWO)


def test_response_shapes_follow_tf_serving():
    scores = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    labels = np.array([1, 1])
    assert format_response("row", {"scores": scores}) == {"predictions": [[1.0, 2.0], [3.0, 4.0]]}
    assert format_response("row", {"scores": scores, "label": labels}) == {
        "predictions": [{"label": 1, "scores": [1.0, 2.0]}, {"label": 1, "scores": [3.0, 4.0]}]}
    assert format_response("columnar", {"scores": scores}) == {"outputs": [[1.0, 2.0], [3.0, 4.0]]}
    assert format_response("columnar", {"scores": scores, "label": labels})["outputs"]["label"] == [1, 1]
    assert format_response("row", {"names": np.array([b"cat"], dtype=object)}) == {"predictions": ["cat"]}
    with pytest.raises(RequestError, match="do not share a batch dimension"):
        format_response("row", {"scores": scores, "total": np.float32(3.0)})


# --- the server ----------------------------------------------------------------------


def test_server_listens_on_localhost_and_reports_status(server):
    assert server.url.startswith("http://127.0.0.1:")
    status = httpx.get(f"{server.url}/v1/models/clf").json()
    assert status["model_version_status"][0]["state"] == "AVAILABLE"
    meta = httpx.get(f"{server.url}/v1/models/clf/metadata").json()
    sig = meta["metadata"]["signature_def"]["signature_def"]["classify"]
    assert sig["inputs"]["features"]["dtype"] == "DT_FLOAT"
    assert [d["size"] for d in sig["inputs"]["features"]["tensor_shape"]["dim"]] == ["-1", "4"]


def test_predict_row_and_columnar_match_the_model(server):
    x = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)
    expected = x @ W
    rows = httpx.post(server.predict_url, json={"instances": x.tolist()}).json()
    np.testing.assert_allclose(np.array(rows["predictions"]), expected, rtol=1e-5)
    cols = httpx.post(server.predict_url, json={"signature_name": "classify", "inputs": x.tolist()}).json()
    np.testing.assert_allclose(np.array(cols["outputs"]["scores"]), expected, rtol=1e-5)
    assert cols["outputs"]["label"] == expected.argmax(-1).tolist()
    named = httpx.post(server.predict_url, json={"signature_name": "classify", "instances": x.tolist()}).json()
    assert [p["label"] for p in named["predictions"]] == expected.argmax(-1).tolist()


@pytest.mark.parametrize("content,status,message", [
    ("{not json", 400, "JSON Parse error"),
    (json.dumps({"instances": [[1, 2, 3]]}), 400, "shape [1, 3]"),
    (json.dumps({"signature_name": "nope", "instances": [[1, 2, 3, 4]]}), 400, 'signature key "nope" not found'),
    (json.dumps({"instances": [[1, 2, 3, 4]], "inputs": []}), 400, "Not both"),
])
def test_malformed_requests_get_the_error_shape_and_the_server_survives(server, content, status, message):
    reply = httpx.post(server.predict_url, content=content, headers={"content-type": "application/json"})
    assert reply.status_code == status
    assert set(reply.json()) == {"error"} and message in reply.json()["error"]
    assert httpx.post(server.predict_url, json={"instances": [[0, 0, 0, 1]]}).status_code == 200


def test_unknown_model_and_path_are_404_with_error(server):
    reply = httpx.post(f"{server.url}/v1/models/other:predict", json={"instances": [[1, 2, 3, 4]]})
    assert reply.status_code == 404 and "Servable not found" in reply.json()["error"]
    assert httpx.get(f"{server.url}/v1/models/other").status_code == 404
    assert "error" in httpx.get(f"{server.url}/index.html").json()
    reply = httpx.post(f"{server.url}/v1/models/clf/versions/1:predict", json={"instances": [[1, 2, 3, 4]]})
    assert reply.status_code == 404 and "/versions/ and /labels/ are not implemented" in reply.json()["error"]
    reply = httpx.post(f"{server.url}/v1/models/clf:classify", json={"examples": []})
    assert reply.status_code == 404 and "only :predict" in reply.json()["error"]


def test_start_refuses_a_non_savedmodel_and_stop_ends_the_process(tmp_path, exported):
    with pytest.raises(serving.ServerStartError, match="not a SavedModel"):
        serving.start_server(tmp_path)
    with pytest.raises(serving.ServerStartError, match="model name"):
        serving.start_server(exported, "a/b")
    handle = serving.start_server(exported, "again")
    assert handle.running()
    handle.stop()
    assert not handle.running()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{handle.url}/v1/models/again", timeout=2)
