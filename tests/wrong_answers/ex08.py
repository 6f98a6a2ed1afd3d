"""Mutation catalogue for exercise 8 (deployment): per clause of every part a
wrong answer, two right answers written differently, and the hostile classes."""
import json

from tests.wrong_answers import Case, edited, steal_solution

ASSIGNMENT = "08_deployment"


# --- Part 1: export ----------------------------------------------------------------

EXPORT_TEMPLATE = '''
def export_classifier(model, export_dir):
    n_features = model.input_shape[-1]

    @tf.function(input_signature=[tf.TensorSpec({shape}, tf.float32, name="features")])
    def classify(features):
        logits = model(features)
        return {{"probabilities": {probabilities}, "label": tf.argmax(logits, axis=-1)}}

    @tf.function(input_signature=[tf.TensorSpec([None, n_features], tf.float32, name="features")])
    def raw_logits(features):
        logits = model(features)
        return {{"probabilities": logits, "label": tf.argmax(logits, axis=-1)}}

    module = tf.Module()
    module.model = model
    {weights}
    tf.saved_model.save(module, export_dir, signatures={{"classify": classify, "serving_default": {default}}})
'''


def export(shape="[None, n_features]", probabilities="tf.nn.softmax(logits)", default="classify",
           weights="module.weights = [v.value for v in model.variables]"):
    return EXPORT_TEMPLATE.format(shape=shape, probabilities=probabilities, default=default, weights=weights)


# Clause 1: serving_default is another function (same specs, other results).
SERVING_DEFAULT_OTHER_FUNCTION = export(default="raw_logits")
# Clause 2: traced on a concrete batch: the signature only accepts batches of 8.
FIXED_BATCH = export(shape="[8, n_features]")
# Clause 3: the logits where the probabilities were asked for.
LOGITS_AS_PROBABILITIES = export(probabilities="logits")
# Clause 4: reloads with tf.saved_model.load, but the session loader (saved_model_cli
# run, TF Serving) cannot find the variables behind Keras 3's wrappers.
KERAS_WRAPPERS_ONLY = export(weights="pass")

# Clause 3: the label as int32 (tf.argmax's output_type changed), not int64.
LABEL_INT32 = export().replace('"label": tf.argmax(logits, axis=-1)',
                               '"label": tf.argmax(logits, axis=-1, output_type=tf.int32)', 1)

# Right: Keras' own export archive, one endpoint per name.
EXPORT_ARCHIVE = '''
def export_classifier(model, export_dir):
    spec = [tf.TensorSpec([None, model.input_shape[-1]], tf.float32, name="features")]

    def classify(features):
        logits = model(features)
        return {"probabilities": tf.nn.softmax(logits), "label": tf.argmax(logits, axis=-1)}

    archive = keras.export.ExportArchive()
    archive.track(model)
    for name in ("classify", "serving_default"):
        archive.add_endpoint(name, classify, input_signature=spec)
    archive.write_out(export_dir, verbose=False)
'''

# Right: a tf.Module subclass holding the variables, the method as the signature.
EXPORT_MODULE_CLASS = '''
class Classifier(tf.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.variables_ = list(model.trainable_variables) + list(model.non_trainable_variables)
        self.raw = [v.value for v in self.variables_]
        self.classify = tf.function(self._classify, input_signature=[
            tf.TensorSpec(shape=(None,) + tuple(model.input_shape[1:]), dtype=tf.float32, name="features")])

    def _classify(self, features):
        logits = self.model(features, training=False)
        probabilities = tf.math.exp(tf.nn.log_softmax(logits))
        return {"label": tf.cast(tf.argmax(logits, axis=1), tf.int64), "probabilities": probabilities}


def export_classifier(model, export_dir):
    module = Classifier(model)
    tf.saved_model.save(module, str(export_dir),
                        signatures={"serving_default": module.classify, "classify": module.classify})
'''

# Patches the grader: the fresh-process check runs only tf.saved_model.load,
# so an export the session loader cannot read would pass.
PATCH_SPAWN = KERAS_WRAPPERS_ONLY + '''
import autograder.checks.savedmodel as _sm
_real_spawn = _sm._spawn
_sm._spawn = lambda request, batches, timeout_s, strict=True: _real_spawn(
    {**request, "loaders": ["function"]}, batches, timeout_s, strict=strict)
'''

# Reads course files through the grader: the right export, whose serving function also lists the
# course's solution notebooks into a file. Were the judge to load it with its own rights, the list
# would land on the grading machine; the judge refuses it before any process loads it (and would
# load it only in a confined process, where neither the solutions nor the machine's /tmp exist).
EXPORT_LISTS_SOLUTIONS = export().replace(
    '        logits = model(features)\n',
    '        logits = model(features)\n'
    '        tf.io.write_file("/tmp/ag-planted-by-ex08.txt", tf.strings.reduce_join(\n'
    '            tf.io.matching_files("/*/*/solutions/*/*.ipynb"), separator="\\n"))\n', 1)

# --- Part 2: REST --------------------------------------------------------------------

REST_TEMPLATE = '''
def make_predict_request(features, signature_name):
    return {{"signature_name": {name}, "{key}": np.asarray(features).tolist()}}


def read_predictions(response):
    if "error" in response:
        raise {error}(response["error"])
    rows = response["predictions"]
    return (np.array([r["probabilities"] for r in rows], dtype=np.float32),
            np.array([r["label"] for r in rows], dtype=np.{label_dtype}))
'''


def rest(name="signature_name", key="instances", error="RuntimeError", label_dtype="int64"):
    return REST_TEMPLATE.format(name=name, key=key, error=error, label_dtype=label_dtype)


HARD_CODED_SIGNATURE = rest(name='"classify"')       # clause 1
COLUMNAR = rest(key="inputs")                          # clause 2
LABELS_INT32 = rest(label_dtype="int32")               # clause 3
VALUE_ERROR = rest(error="ValueError")                 # clause 4

# Clause 1: the features as an array in the body, which json.dumps refuses.
ARRAY_IN_BODY = '''
def make_predict_request(features, signature_name):
    return {"signature_name": signature_name, "instances": np.asarray(features, dtype=np.float32)}
''' + "\n\n" + rest().split("\n\n\n", 1)[1]

REST_NAMED_INSTANCES = '''
def make_predict_request(features, signature_name):
    rows = [{"features": [float(v) for v in row]} for row in features]
    return {"signature_name": str(signature_name), "instances": rows}


def read_predictions(response):
    if "error" in response:
        raise RuntimeError("TF Serving: " + str(response["error"]))
    probabilities, labels = zip(*[(r["probabilities"], r["label"]) for r in response["predictions"]])
    return np.asarray(probabilities, np.float32).reshape(len(labels), -1), np.asarray(labels, np.int64)
'''

# Right: no "signature_name" key for serving_default, the signature TF Serving answers
# from when the body names none (the grader used to require the key: issue 21).
REST_DEFAULT_SIGNATURE_IMPLIED = '''
def make_predict_request(features, signature_name):
    body = {"instances": np.asarray(features, dtype=np.float64).tolist()}
    if signature_name != "serving_default":
        body["signature_name"] = signature_name
    return body


def read_predictions(response):
    if "error" in response:
        raise RuntimeError(f"TF Serving refused the request: {response['error']}")
    rows = response["predictions"]
    return (np.asarray([row["probabilities"] for row in rows], dtype=np.float32),
            np.asarray([row["label"] for row in rows], dtype=np.int64))
'''

REST_JSON_STRINGS = '''
def make_predict_request(features, signature_name):
    return json.loads(json.dumps({"instances": features.astype(float).tolist(), "signature_name": signature_name}))


def read_predictions(response):
    error = response.get("error")
    if error is not None:
        raise RuntimeError(error)
    predictions = response["predictions"]
    probabilities = np.stack([np.float32(p["probabilities"]) for p in predictions])
    labels = np.fromiter((p["label"] for p in predictions), dtype=np.int64, count=len(predictions))
    return probabilities, labels
'''

# --- Part 3: loading -------------------------------------------------------------------

# Clause 1: every path through tf.saved_model.load, which cannot read a .keras file.
SAVEDMODEL_LOADER_FOR_EVERYTHING = '''
def load_for_inference(path):
    signature = tf.saved_model.load(str(path)).signatures["serving_default"]
    (input_name,) = signature.structured_input_signature[1]
    (output_name,) = signature.structured_outputs
    return lambda features: signature(**{input_name: tf.constant(features, tf.float32)})[output_name].numpy()
'''

# Clause 2: assumes the names model.export gives (inputs named after the Keras
# Input, output "output_0"): fails on another SavedModel.
FIXED_SIGNATURE_NAMES = '''
def load_for_inference(path):
    if str(path).endswith(".keras"):
        loaded = keras.models.load_model(path)
        return lambda features: np.asarray(loaded(features))
    signature = tf.saved_model.load(str(path)).signatures["serving_default"]
    return lambda features: signature(features=tf.constant(features))["output_0"].numpy()
'''

# Clause 3: returns tensors.
RETURNS_TENSORS = '''
def load_for_inference(path):
    if str(path).endswith(".keras"):
        return keras.models.load_model(path)
    signature = tf.saved_model.load(str(path)).signatures["serving_default"]
    (input_name,) = signature.structured_input_signature[1]
    (output_name,) = signature.structured_outputs
    return lambda features: signature(**{input_name: tf.constant(features, tf.float32)})[output_name]
'''

LOAD_TFSMLAYER = '''
def load_for_inference(path):
    if os.path.isdir(path):
        layer = keras.layers.TFSMLayer(path, call_endpoint="serving_default")

        def predict(features):
            out = layer(tf.convert_to_tensor(features, tf.float32))
            if isinstance(out, dict):
                (out,) = out.values()
            return np.asarray(out)
        return predict
    model = keras.saving.load_model(path)
    return lambda features: model.predict_on_batch(features)
'''

LOAD_BY_SUFFIX = '''
import pathlib

def load_for_inference(path):
    path = pathlib.Path(path)
    if path.suffix == ".keras":
        return lambda features, _m=keras.models.load_model(path): _m(features).numpy()
    sig = tf.saved_model.load(str(path)).signatures["serving_default"]
    name = next(iter(sig.structured_input_signature[1]))
    return lambda features: next(iter(sig(**{name: tf.convert_to_tensor(features)}).values())).numpy()
'''

# Rebinds a locked name: the hidden tests would build their models with the learner's make_model.
REBIND_MAKE_MODEL = LOAD_BY_SUFFIX + '''
_given_make_model = make_model

def make_model(n_features=6, n_classes=3, seed=8):
    return _given_make_model(n_features, n_classes, seed=8)
'''

# --- Part 4: fast predict ---------------------------------------------------------------

# Clause 1: applies a softmax the model does not have.
FAST_SOFTMAX = '''
def make_fast_predict(model):
    spec = tf.TensorSpec([None, model.input_shape[-1]], tf.float32)
    return tf.function(lambda x: tf.nn.softmax(model(x)), input_signature=[spec])
'''

# Clause 2: a tf.function without an input_signature: one trace per batch size.
RETRACING = '''
def make_fast_predict(model):
    return tf.function(model)
'''

# Clause 3: traced once, right outputs, but a graph that also does useless heavy work.
SLOW_GRAPH = '''
def make_fast_predict(model):
    waste = tf.random.stateless_normal((256, 256), seed=[1, 2])

    @tf.function(input_signature=[tf.TensorSpec([None, model.input_shape[-1]], tf.float32)])
    def fast(x):
        w = waste
        for _ in range(6):
            w = tf.tanh(tf.matmul(w, waste))
        return model(x) + 0.0 * tf.reduce_sum(w)
    return fast
'''

# Duck-typed: reports one trace, runs the model eagerly on every call.
DUCK_TRACING_COUNT = '''
class FastPredict:
    def __init__(self, model):
        self.model = model

    def __call__(self, x):
        return self.model(x)

    def experimental_get_tracing_count(self):
        return 1


def make_fast_predict(model):
    return FastPredict(model)
'''

# Clause 1: the model's numbers recomputed in NumPy from its weights: right outputs,
# but the model's computation never runs.
NUMPY_FORWARD = '''
def make_fast_predict(model):
    w1, b1, w2, b2 = [np.asarray(w) for w in model.get_weights()]
    return lambda features: np.maximum(np.asarray(features) @ w1 + b1, 0.0) @ w2 + b2
'''

FAST_DECORATED = '''
def make_fast_predict(model):
    @tf.function(input_signature=(tf.TensorSpec(shape=(None,) + tuple(model.input_shape[1:]), dtype=tf.float32),))
    def predict(features):
        return model(features, training=False)
    return predict
'''

FAST_WRAPPED_XLA = '''
def make_fast_predict(model):
    core = tf.function(lambda x: model(x), jit_compile=True,
                       input_signature=[tf.TensorSpec([None, model.input_shape[-1]], tf.float32)])

    def predict(features):
        return core(tf.convert_to_tensor(features, tf.float32))
    return predict
'''

# --- Attacks on what the kernel reports -------------------------------------------------

# The wire shaped: the body holds a NumPy array (not JSON-serialisable), and the kernel's JSON encoder
# is patched to turn arrays into lists, so a json.dumps in the kernel would accept it.
PATCHES_THE_JSON_ENCODER = """
import json as _json
_json.JSONEncoder.default = lambda self, value: value.tolist() if hasattr(value, "tolist") else str(value)
""" + edited("08_deployment", "answer-rest", '"instances": np.asarray(features).tolist()}',
             '"instances": np.asarray(features)}')

CASES = [
    Case(
        name="right_export_archive_named_instances_tfsmlayer_decorated",
        replace={"answer-export": EXPORT_ARCHIVE, "answer-rest": REST_NAMED_INSTANCES,
                 "answer-load": LOAD_TFSMLAYER, "answer-fast-predict": FAST_DECORATED},
    ),
    Case(
        name="right_module_class_json_roundtrip_suffix_wrapped_xla",
        replace={"answer-export": EXPORT_MODULE_CLASS, "answer-rest": REST_JSON_STRINGS,
                 "answer-load": LOAD_BY_SUFFIX, "answer-fast-predict": FAST_WRAPPED_XLA},
    ),
    Case(
        name="right_rest_default_signature_implied",
        replace={"answer-rest": REST_DEFAULT_SIGNATURE_IMPLIED},
    ),
    Case(
        name="clause1_default_other_function_fixed_names_and_duck_typed_predict",
        replace={"answer-export": SERVING_DEFAULT_OTHER_FUNCTION, "answer-rest": HARD_CODED_SIGNATURE,
                 "answer-load": FIXED_SIGNATURE_NAMES, "answer-fast-predict": DUCK_TRACING_COUNT},
        loses=("test-export", "test-rest", "test-load", "test-fast-predict"),
        breaks={"test-export": 1, "test-rest": 1, "test-load": 2},
        messages={"test-export": "'serving_default' must be the same function",
                  "test-rest": "expected 'serving_default'", "test-load": "'raw_savedmodel'",
                  "test-fast-predict": "ran 5 times"},
        hostile="duck-typed",
    ),
    Case(
        name="clause2_fixed_batch_columnar_tensors_retracing",
        replace={"answer-export": FIXED_BATCH, "answer-rest": COLUMNAR, "answer-load": RETURNS_TENSORS,
                 "answer-fast-predict": RETRACING},
        loses=("test-export", "test-rest", "test-load", "test-fast-predict"),
        breaks={"test-export": 2, "test-rest": 2, "test-load": 3, "test-fast-predict": 2},
        messages={"test-export": "the batch dimension must be None", "test-rest": "'instances'",
                  "test-load": "return a NumPy array", "test-fast-predict": "ran 5 times"},
    ),
    Case(
        name="clause3_logits_int32_labels_keras_file_unreadable_softmax",
        replace={"answer-export": LOGITS_AS_PROBABILITIES, "answer-rest": LABELS_INT32,
                 "answer-load": SAVEDMODEL_LOADER_FOR_EVERYTHING, "answer-fast-predict": FAST_SOFTMAX},
        loses=("test-export", "test-rest", "test-load", "test-fast-predict"),
        breaks={"test-export": 3, "test-rest": 3, "test-load": 1, "test-fast-predict": 1},
        messages={"test-export": "output 'probabilities'", "test-rest": "expected float32 and int64",
                  "test-load": "'model.keras'", "test-fast-predict": "other outputs"},
    ),
    Case(
        name="clause4_session_loader_value_error_slow_graph_and_stolen_loader",
        replace={"answer-export": KERAS_WRAPPERS_ONLY, "answer-rest": VALUE_ERROR,
                 "answer-load": steal_solution(ASSIGNMENT, "answer-load"), "answer-fast-predict": SLOW_GRAPH},
        loses=("test-export", "test-rest", "test-load", "test-fast-predict"),
        breaks={"test-export": 4, "test-rest": 4, "test-fast-predict": 3},
        messages={"test-export": "Could not find variable", "test-rest": "raised ValueError",
                  "test-fast-predict": "too slow"},
        hostile="reads-course-files",
    ),
    Case(
        name="clause_int32_label_array_body_numpy_forward",
        replace={"answer-export": LABEL_INT32, "answer-rest": ARRAY_IN_BODY, "answer-fast-predict": NUMPY_FORWARD},
        loses=("test-export", "test-rest", "test-fast-predict"),
        breaks={"test-export": 3, "test-rest": 1, "test-fast-predict": 1},
        messages={"test-export": "is int32, expected int64", "test-rest": "not JSON-serialisable",
                  "test-fast-predict": "computation ran 0 times"},
        keeps=("test-load",),
    ),
    Case(
        name="hostile_rebinds_make_model",
        replace={"answer-load": REBIND_MAKE_MODEL},
        loses=("test-load", "test-fast-predict"),
        messages={"test-load": "integrity", "test-fast-predict": "integrity"},
        hostile="rebinds-locked-name",
    ),
    Case(
        name="hostile_export_lists_the_solutions_through_the_judge",
        replace={"answer-export": EXPORT_LISTS_SOLUTIONS},
        loses=("test-export",),
        messages={"test-export": "cannot be loaded by the grader: its functions use MatchingFiles"},
        keeps=("test-load",),
        hostile="reads-course-files",
    ),
    Case(
        name="hostile_patches_savedmodel_spawn",
        replace={"answer-export": PATCH_SPAWN},
        loses=("test-export", "test-rest", "test-load", "test-fast-predict"),
        messages={"test-export": "integrity"},
        hostile="patches-grader",
    ),
    Case(
        name="patches_the_json_encoder",
        replace={"answer-rest": PATCHES_THE_JSON_ENCODER},
        attacks=("test-rest",),
        hostile="shapes-the-wire",
    ),
]
