"""The judge refuses learner graphs that could touch files, Python or resources."""
from __future__ import annotations

import pytest
import tensorflow as tf

from autograder.checks import graph_guard


def _graph(fn, *specs):
    return tf.function(fn).get_concrete_function(*specs).graph.as_graph_def()


def test_math_graphs_pass_and_import():
    graph = _graph(lambda x: tf.nn.relu(x @ tf.transpose(x)) + 1.0, tf.TensorSpec([2, 2]))
    assert graph_guard.unsafe_ops(graph) == []
    graph_guard.install()
    with tf.Graph().as_default():
        tf.compat.v1.import_graph_def(graph, name="")


def test_a_loop_in_the_library_passes():
    def loop(n):
        return tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + tf.cast(i, tf.float32)), (0, 0.0))[1]
    assert graph_guard.unsafe_ops(_graph(loop, tf.TensorSpec([], tf.int32))) == []


@pytest.mark.parametrize("fn, spec, word", [
    (lambda p: tf.io.read_file(p), tf.TensorSpec([], tf.string), "ReadFile"),
    (lambda p: [tf.io.write_file(p, "x"), tf.constant(1.0)][1], tf.TensorSpec([], tf.string), "WriteFile"),
    (lambda x: tf.py_function(lambda v: v, [x], tf.float32), tf.TensorSpec([]), "PyFunc"),
])
def test_file_python_and_resource_ops_are_refused_even_via_import(fn, spec, word):
    graph = _graph(fn, spec)
    assert any(word in problem for problem in graph_guard.unsafe_ops(graph))
    graph_guard.install()
    with tf.Graph().as_default(), pytest.raises(graph_guard.UnsafeGraph):
        tf.graph_util.import_graph_def(graph, name="")


def test_a_variable_is_refused():
    v = tf.Variable(1.0)
    graph = _graph(lambda x: x * v, tf.TensorSpec([]))
    assert any("resource" in problem for problem in graph_guard.unsafe_ops(graph))


def test_an_unknown_op_is_refused():
    graph = tf.compat.v1.GraphDef()
    graph.node.add(name="x", op="TotallyMadeUpOp")
    assert graph_guard.unsafe_ops(graph) == ["TotallyMadeUpOp (not an op TensorFlow knows)"]


# --- SavedModels ---------------------------------------------------------------------------

from tensorflow.core.protobuf import saved_model_pb2  # noqa: E402


class _Served(tf.Module):
    """A served classifier; ``extra`` adds ops to its serving function."""

    def __init__(self, extra=None):
        super().__init__()
        self.w = tf.Variable(tf.ones([4, 3]))
        self.extra = extra
        self.serve = tf.function(self._serve, input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])

    def _serve(self, x):
        if self.extra is not None:
            self.extra(x)
        return {"y": tf.nn.softmax(x @ self.w)}


def _saved(tmp_path, module, name="m"):
    path = tmp_path / name
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.serve})
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((path / "saved_model.pb").read_bytes())
    return path, proto


def test_a_plain_savedmodel_and_a_keras_export_pass(tmp_path):
    path, proto = _saved(tmp_path, _Served())
    assert graph_guard.unsafe_savedmodel_ops(proto) == []
    graph_guard.refuse_unsafe_savedmodel(path)
    import keras

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.export(str(tmp_path / "keras"), verbose=False)
    graph_guard.refuse_unsafe_savedmodel(tmp_path / "keras")
    # tf.print to the process's own streams is a learner's leftover debugging, not a file write
    graph_guard.refuse_unsafe_savedmodel(_saved(tmp_path, _Served(lambda x: tf.print(x)), "printed")[0])


@pytest.mark.parametrize("extra, word", [
    (lambda x: tf.io.write_file("/tmp/planted-marker", "x"), "WriteFile"),
    (lambda x: tf.io.read_file("/etc/hostname"), "ReadFile"),
    (lambda x: tf.io.matching_files("/work/*"), "MatchingFiles"),
    (lambda x: tf.print(x, output_stream="file:///tmp/planted-print"), "tf.print to a file"),
    (lambda x: tf.raw_ops.SaveV2(prefix="/tmp/planted-ckpt", tensor_names=["x"], shape_and_slices=[""],
                                 tensors=[x]), "SaveV2"),
    (lambda x: tf.raw_ops.RestoreV2(prefix="/tmp/planted-ckpt", tensor_names=["x"], shape_and_slices=[""],
                                    dtypes=[tf.float32]), "RestoreV2"),
])
def test_a_serving_function_that_reaches_files_is_refused(tmp_path, extra, word):
    """Every file op in a served function is refused, the checkpoint ops too: they are allowed only
    in the saver's own functions."""
    path, proto = _saved(tmp_path, _Served(extra))
    assert any(word in problem for problem in graph_guard.unsafe_savedmodel_ops(proto)), \
        graph_guard.unsafe_savedmodel_ops(proto)
    with pytest.raises(graph_guard.UnsafeGraph, match="cannot be loaded by the grader"):
        graph_guard.refuse_unsafe_savedmodel(path)


def test_the_savers_functions_may_use_the_checkpoint_but_nothing_else_may_call_them(tmp_path):
    """The restore function reads the checkpoint (allowed where only the saver's restore node
    reaches it). A signature, or the saver's restore node, pointed at the save function turns it into
    an ordinary function, whose SaveV2 is then refused."""
    _, proto = _saved(tmp_path, _Served())
    meta = proto.meta_graphs[0]
    calls = {node.name: node.attr["f"].func.name for node in meta.graph_def.node if node.op == "StatefulPartitionedCall"}
    save_node = meta.saver_def.save_tensor_name.split(":")[0]
    restore_node = meta.saver_def.restore_op_name
    assert "RestoreV2" in {n.op for f in meta.graph_def.library.function if f.signature.name == calls[restore_node]
                           for n in f.node_def}
    swapped = saved_model_pb2.SavedModel.FromString(proto.SerializeToString())
    swapped.meta_graphs[0].saver_def.restore_op_name = save_node  # restore now runs the save function
    assert any("SaveV2" in p or "MergeV2Checkpoints" in p for p in graph_guard.unsafe_savedmodel_ops(swapped))
    hijacked = saved_model_pb2.SavedModel.FromString(proto.SerializeToString())
    serving = next(n for n in hijacked.meta_graphs[0].graph_def.node
                   if n.op == "StatefulPartitionedCall" and n.name not in (save_node, restore_node))
    serving.attr["f"].func.name = calls[restore_node]  # a signature that runs the restore function
    assert any("RestoreV2" in p for p in graph_guard.unsafe_savedmodel_ops(hijacked))


def test_a_savedmodel_that_is_not_one_is_refused_in_a_line(tmp_path):
    (tmp_path / "saved_model.pb").write_bytes(b"\xff\xff not a protobuf")
    with pytest.raises(graph_guard.UnsafeGraph, match="could not be read as a SavedModel"):
        graph_guard.refuse_unsafe_savedmodel(tmp_path)
