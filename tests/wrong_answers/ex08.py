"""Planted wrong answers for exercise 8 (deployment)."""
from tests.wrong_answers import WrongAnswer

ASSIGNMENT = "08_deployment"

FULL = {"test-export": 4, "test-rest": 2, "test-load": 2, "test-fast-predict": 2}

# Traced on a concrete batch: the signature only accepts batches of 8.
FIXED_BATCH = '''
def export_classifier(model, export_dir):
    n_features = model.input_shape[-1]

    @tf.function(input_signature=[tf.TensorSpec([8, n_features], tf.float32, name="features")])
    def classify(features):
        logits = model(features)
        return {"probabilities": tf.nn.softmax(logits), "label": tf.argmax(logits, axis=-1)}

    module = tf.Module()
    module.model = model
    module.weights = [v.value for v in model.variables]
    tf.saved_model.save(module, export_dir, signatures={"classify": classify, "serving_default": classify})
'''

# Reloads with tf.saved_model.load, but the session loader (saved_model_cli
# run, TF Serving) cannot find the variables behind Keras 3's wrappers.
KERAS_WRAPPERS_ONLY = '''
def export_classifier(model, export_dir):
    n_features = model.input_shape[-1]

    @tf.function(input_signature=[tf.TensorSpec([None, n_features], tf.float32, name="features")])
    def classify(features):
        logits = model(features)
        return {"probabilities": tf.nn.softmax(logits), "label": tf.argmax(logits, axis=-1)}

    module = tf.Module()
    module.model = model
    tf.saved_model.save(module, export_dir, signatures={"classify": classify, "serving_default": classify})
'''

# A tf.function without an input_signature: fast, but one trace per batch size.
RETRACING = '''
def make_fast_predict(model):
    return tf.function(model)
'''

# The columnar format where the row format was asked for.
COLUMNAR = '''
def make_predict_request(features, signature_name):
    return {"signature_name": signature_name, "inputs": np.asarray(features).tolist()}


def read_predictions(response):
    if "error" in response:
        raise RuntimeError(response["error"])
    rows = response["predictions"]
    return (np.array([r["probabilities"] for r in rows], dtype=np.float32),
            np.array([r["label"] for r in rows], dtype=np.int64))
'''

# Keras 2 habit: load_model for everything, which Keras 3 refuses for a SavedModel.
LOAD_MODEL_EVERYWHERE = '''
def load_for_inference(path):
    loaded = keras.models.load_model(path)
    return lambda features: np.asarray(loaded(features))
'''

CASES = [
    WrongAnswer(
        name="fixed_batch_dimension",
        replace={"answer-export": FIXED_BATCH},
        expect={**FULL, "test-export": 0},
        messages={"test-export": "the batch dimension must be None"},
    ),
    WrongAnswer(
        name="keras_wrappers_only_and_retracing_predict",
        replace={"answer-export": KERAS_WRAPPERS_ONLY, "answer-fast-predict": RETRACING},
        expect={**FULL, "test-export": 0, "test-fast-predict": 0},
        messages={"test-export": "Could not find variable", "test-fast-predict": "traced 5 times"},
    ),
    WrongAnswer(
        name="columnar_request_and_load_model_on_savedmodel",
        replace={"answer-rest": COLUMNAR, "answer-load": LOAD_MODEL_EVERYWHERE},
        expect={**FULL, "test-rest": 0, "test-load": 0},
        messages={"test-rest": "'instances'", "test-load": "File format not supported"},
    ),
]
