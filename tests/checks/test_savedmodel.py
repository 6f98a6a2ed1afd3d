"""autograder.checks.savedmodel: describing and calling a SavedModel in a fresh process."""
from __future__ import annotations

import numpy as np
import pytest

from autograder.checks import clean_subprocess
from autograder.checks import savedmodel as sm
from autograder.judge import fresh_python
from tests.conftest import SOLUTIONS


tf = pytest.importorskip("tensorflow")

W = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0


class Classifier(tf.Module):
    def __init__(self, batch=None):
        self.w = tf.Variable(W)
        spec = tf.TensorSpec([batch, 4], tf.float32, name="features")
        self.classify = tf.function(self._classify, input_signature=[spec])

    def _classify(self, features):
        logits = tf.matmul(features, self.w)
        return {"probabilities": tf.nn.softmax(logits), "label": tf.argmax(logits, -1)}


def reference(batch):
    logits = batch["features"] @ W
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return {"probabilities": e / e.sum(-1, keepdims=True), "label": logits.argmax(-1)}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path = tmp_path_factory.mktemp("sm") / "classifier"
    module = Classifier()
    tf.saved_model.save(module, str(path), signatures={"classify": module.classify})
    return path


@pytest.fixture(scope="module")
def fixed_batch(tmp_path_factory):
    path = tmp_path_factory.mktemp("sm") / "fixed"
    module = Classifier(batch=8)
    tf.saved_model.save(module, str(path), signatures={"classify": module.classify})
    return path


@pytest.fixture(autouse=True)
def fresh_processes(request, monkeypatch):
    """The fresh process forked as the judge forks it (``judge/fresh_python.py``, about 4 s less
    each); the tests parametrized with ``process`` try a new interpreter too, as a kernel starts it."""
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    if params.get("process", "forked") == "forked":
        monkeypatch.setattr(clean_subprocess, "RUNNER", fresh_python.run_module)
    else:
        monkeypatch.setattr(clean_subprocess, "RUNNER", None)


BOTH_WAYS = pytest.mark.parametrize("process", ["forked", "new interpreter"])


def batches(*sizes):
    rng = np.random.default_rng(0)
    return [{"features": rng.normal(size=(n, 4)).astype(np.float32)} for n in sizes]


@pytest.mark.slow  # loads TensorFlow in a fresh process
@BOTH_WAYS
def test_describe_reports_specs_from_a_fresh_process(exported, process):
    found = sm.describe(exported)
    assert set(found) == {"classify"}
    sig = found["classify"]
    assert sig.inputs == {"features": sm.TensorInfo("features", "float32", (None, 4))}
    assert sig.outputs["probabilities"] == sm.TensorInfo("probabilities", "float32", (None, 3))
    assert sig.outputs["label"] == sm.TensorInfo("label", "int64", (None,))
    assert "features: float32 [None, 4]" in sig.describe()


@pytest.mark.slow  # loads TensorFlow in a fresh process
def test_call_and_compare_several_batch_sizes_in_one_process(exported):
    run = sm.assert_matches_reference(exported, "classify", reference, batches(1, 5, 64))
    assert [o["probabilities"].shape for o in run.outputs] == [(1, 3), (5, 3), (64, 3)]
    assert run.outputs[1]["label"].dtype == np.int64


@pytest.mark.slow  # loads TensorFlow in a fresh process
def test_wrong_reference_names_batch_and_key(exported):
    def off_by_one(batch):
        out = reference(batch)
        return {**out, "label": out["label"] + 1}

    with pytest.raises(AssertionError, match=r"batch of 3, output 'label'.*differs"):
        sm.assert_matches_reference(exported, "classify", off_by_one, batches(3))


@pytest.mark.slow  # loads TensorFlow in a fresh process
def test_missing_output_key_is_named(exported):
    with pytest.raises(AssertionError, match=r"returned keys \['label', 'probabilities'\], expected \['scores'\]"):
        sm.assert_matches_reference(exported, "classify", lambda b: {"scores": np.zeros(len(b["features"]))},
                                    batches(2))


@pytest.mark.slow  # loads TensorFlow in a fresh process
def test_spec_check_passes_and_fails_with_reasons(exported, fixed_batch):
    found = sm.describe(exported)
    sm.check_spec(found, "classify", inputs={"features": ("float32", [None, 4])},
                  outputs={"probabilities": ("float32", [None, 3]), "label": ("int64", [None])})
    with pytest.raises(AssertionError, match="no signature 'serving_default'; it has \\['classify'\\]"):
        sm.check_spec(found, "serving_default", inputs={"features": ("float32", [None, 4])})
    with pytest.raises(AssertionError, match="is float32, expected float16"):
        sm.check_spec(found, "classify", inputs={"features": ("float16", [None, 4])})
    with pytest.raises(AssertionError, match=r"has outputs \['label', 'probabilities'\], expected \['probabilities'\]"):
        sm.check_spec(found, "classify", inputs={"features": ("float32", None)},
                      outputs={"probabilities": ("float32", None)})
    with pytest.raises(AssertionError, match=r"shape \[8, 4\], expected \[None, 4\]; the batch dimension must be None"):
        sm.assert_signature_spec(fixed_batch, "classify", inputs={"features": ("float32", [None, 4])})


@pytest.mark.slow  # loads TensorFlow in a fresh process
def test_feeds_that_do_not_fit_are_explained(exported, fixed_batch):
    with pytest.raises(AssertionError, match="takes inputs \\['features'\\], but the check feeds \\['x'\\]"):
        sm.call_signature(exported, "classify", {"x": np.zeros((2, 4), np.float32)})
    with pytest.raises(AssertionError, match="expects float32, the check feeds float64"):
        sm.call_signature(exported, "classify", {"features": np.zeros((2, 4))})
    with pytest.raises(AssertionError, match="use None for the batch dimension"):
        sm.call_signature(fixed_batch, "classify", batches(3))


@pytest.mark.slow  # loads TensorFlow in a fresh process
@BOTH_WAYS
def test_py_function_works_in_process_but_is_refused_before_a_fresh_one_loads_it(tmp_path, process):
    class Leaky(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def f(self, x):
            y = tf.py_function(lambda a: a * 2.0, [x], tf.float32)
            return {"y": tf.reshape(y, [-1, 4])}

    module = Leaky()
    tf.saved_model.save(module, str(tmp_path / "leaky"), signatures={"serving_default": module.f})
    same_process = tf.saved_model.load(str(tmp_path / "leaky"))
    assert same_process.signatures["serving_default"](x=tf.ones((1, 4)))["y"].numpy().sum() == 8.0
    with pytest.raises(AssertionError, match="cannot be loaded by the grader: its functions use EagerPyFunc"):
        sm.call_signature(tmp_path / "leaky", "serving_default", {"x": np.ones((1, 4), np.float32)})


def test_not_a_savedmodel(tmp_path):
    with pytest.raises(AssertionError, match="no directory at"):
        sm.describe(tmp_path / "missing")
    (tmp_path / "model.keras").write_bytes(b"")
    with pytest.raises(AssertionError, match="no saved_model.pb.*a .keras file is not a SavedModel"):
        sm.describe(tmp_path)


def test_error_summary_finds_the_cause_in_a_graph_error():
    text = ("Graph execution error:\n\nDetected at node EagerPyFunc defined at (most recent call last):\n"
            "<stack traces unavailable>\nValueError: Could not find callback with key=pyfunc_0 in the registry.\n")
    assert sm.error_summary(RuntimeError(text)) == (
        "at node EagerPyFunc: ValueError: Could not find callback with key=pyfunc_0 in the registry.")
    assert sm.error_summary(ValueError("first\nsecond")) == "first"
    assert sm.error_summary(ValueError("")) == "ValueError"


def _keras_in_module(track_raw_variables: bool, path):
    keras = pytest.importorskip("keras")
    inputs = keras.Input((4,), name="features")
    model = keras.Model(inputs, keras.layers.Dense(3, name="logits")(inputs))

    class Wrapper(tf.Module):
        def __init__(self):
            self.model = model
            if track_raw_variables:
                self.raw = [v.value for v in model.variables]

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="features")])
        def classify(self, features):
            return {"logits": self.model(features)}

    module = Wrapper()
    tf.saved_model.save(module, str(path), signatures={"classify": module.classify})
    return model


@pytest.mark.slow  # loads TensorFlow in a fresh process
def test_session_loader_rejects_keras_wrappers_and_accepts_raw_variables(tmp_path):
    feed = {"features": np.ones((2, 4), np.float32)}
    _keras_in_module(False, tmp_path / "wrapped")
    assert sm.call_signature(tmp_path / "wrapped", "classify", feed).outputs[0]["logits"].shape == (2, 3)
    with pytest.raises(AssertionError, match="session loader.*Could not find variable.*Hint: .*model.export"):
        sm.call_signature(tmp_path / "wrapped", "classify", feed, loaders=("function", "session"))
    model = _keras_in_module(True, tmp_path / "raw")
    run = sm.assert_matches_reference(tmp_path / "raw", "classify", lambda b: {"logits": model(b["features"])},
                                      [feed], loaders=("function", "session"))
    assert set(run.outputs_by_loader) == {"function", "session"}


def test_unknown_loader_is_a_usage_error(exported):
    with pytest.raises(ValueError, match="loaders must be"):
        sm.call_signature(exported, "classify", batches(1), loaders=("tflite",))


@pytest.mark.slow  # loads TensorFlow in a fresh process
def test_check_export_reports_the_spec_before_the_call(exported, fixed_batch):
    spec = {"features": ("float32", [None, 4])}
    outs = {"probabilities": ("float32", [None, 3]), "label": ("int64", [None])}
    run = sm.check_export(exported, "classify", inputs=spec, outputs=outs, reference=reference,
                          batches=batches(1, 9))
    assert set(run.outputs_by_loader) == {"function", "session"}
    with pytest.raises(AssertionError, match="the batch dimension must be None"):
        sm.check_export(fixed_batch, "classify", inputs=spec, outputs=outs, reference=reference,
                        batches=batches(3), loaders=("function",))


class TwoFunctions(Classifier):
    """``classify`` and a ``scaled`` function with the same specs but other results."""

    def __init__(self):
        super().__init__()
        spec = tf.TensorSpec([None, 4], tf.float32, name="features")
        self.scaled = tf.function(lambda features: self._classify(features * 2.0), input_signature=[spec])


@pytest.mark.slow  # loads TensorFlow in a fresh process
def test_check_export_also_calls_the_other_signatures(tmp_path):
    spec = {"features": ("float32", [None, 4])}
    outs = {"probabilities": ("float32", [None, 3]), "label": ("int64", [None])}
    module = TwoFunctions()
    same, other = tmp_path / "same", tmp_path / "other"
    tf.saved_model.save(module, str(same), signatures={"classify": module.classify, "serving_default": module.classify})
    tf.saved_model.save(module, str(other), signatures={"classify": module.classify, "serving_default": module.scaled})
    run = sm.check_export(same, "classify", also=("serving_default",), inputs=spec, outputs=outs,
                          reference=reference, batches=batches(1, 5))
    assert set(run.signatures) == {"classify", "serving_default"}
    with pytest.raises(AssertionError, match="'serving_default' must be the same function as 'classify'"):
        sm.check_export(other, "classify", also=("serving_default",), inputs=spec, outputs=outs,
                        reference=reference, batches=batches(3))
    with pytest.raises(AssertionError, match="register the same function as 'predict' too"):
        sm.check_export(same, "classify", also=("predict",), inputs=spec, outputs=outs,
                        reference=reference, batches=batches(3), loaders=("function",))


# --- a learner's SavedModel never runs with the grader's rights ------------------------------

class Planted(Classifier):
    """The classifier with one more output: ``reads`` holds a course file's bytes, or the function
    writes a marker outside its folder."""

    def __init__(self, read: str | None = None, write: str | None = None):
        super().__init__()
        self.read, self.write = read, write

    def _classify(self, features):
        out = super()._classify(features)
        if self.write:
            tf.io.write_file(self.write, tf.strings.reduce_join(tf.io.matching_files(str(SOLUTIONS / "*" / "*.ipynb"))))
        if self.read:
            out["reads"] = tf.io.read_file(self.read)
        return out


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    base = tmp_path_factory.mktemp("planted")
    course_file = str(SOLUTIONS / "08_deployment" / "08_deployment.ipynb")
    marker = base / "outside" / "marker.txt"
    marker.parent.mkdir()
    paths = {}
    for name, module in (("reads", Planted(read=course_file)), ("writes", Planted(write=str(marker)))):
        paths[name] = base / name
        tf.saved_model.save(module, str(paths[name]), signatures={"classify": module.classify})
    return paths, marker


@pytest.fixture
def in_the_judge(monkeypatch):
    """As in the judge: the fresh process is confined."""
    monkeypatch.setattr(clean_subprocess, "CONFINE", True)


@pytest.mark.slow  # loads TensorFlow in a fresh process
@BOTH_WAYS
def test_a_planted_savedmodel_is_refused_before_it_is_loaded(planted, in_the_judge, process, monkeypatch):
    paths, marker = planted
    started = []
    monkeypatch.setattr(clean_subprocess, "run_new_interpreter", lambda *a, **k: started.append(a))
    monkeypatch.setattr(fresh_python, "run_module", lambda *a, **k: started.append(a))
    for name, word in (("reads", "ReadFile"), ("writes", "WriteFile")):
        with pytest.raises(AssertionError, match=f"cannot be loaded by the grader: its functions use .*{word}"):
            sm.check_export(paths[name], "classify", inputs={"features": ("float32", [None, 4])}, outputs=None,
                            reference=reference, batches=batches(2))
    assert started == [], "a process was started for a refused SavedModel"
    assert not marker.exists()


@pytest.mark.slow  # loads TensorFlow in a fresh (confined) process
@BOTH_WAYS
def test_behind_the_op_check_the_loader_is_shut_in(planted, in_the_judge, process, monkeypatch):
    """The second wall alone (the op check switched off): the confined loader runs the planted
    functions, and they find no course file and write nothing the machine keeps."""
    from autograder.checks import graph_guard

    paths, marker = planted
    monkeypatch.setattr(graph_guard, "refuse_unsafe_savedmodel", lambda export_dir: None)
    with pytest.raises(AssertionError, match="NotFoundError"):
        sm.call_signature(paths["reads"], "classify", batches(2))
    run = sm.call_signature(paths["writes"], "classify", batches(2))
    np.testing.assert_allclose(run.outputs[0]["probabilities"], reference(batches(2)[0])["probabilities"], rtol=1e-5)
    assert not marker.exists(), "the planted SavedModel wrote outside the confined process"
