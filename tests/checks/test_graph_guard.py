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
