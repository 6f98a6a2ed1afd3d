"""Graphs a learner sent, checked before the judge imports and runs them.

Several hidden tests take the GraphDef of a learner's ``tf.function`` as bytes and run
it in the judge, outside the sandbox: what it computes is then judged, not reported.
A GraphDef is data, but the ops it names run with the judge's rights, so one that
reads or writes files (``ReadFile``, ``WriteFile``, ``SaveV2``, a ``TFRecordReader``,
``ImmutableConst``), calls Python (``PyFunc``) or holds resources (variables, tables,
datasets, iterators, summary writers) could reach what the sandbox hides.  TensorList
and TensorArray values (``variant``) are allowed: loops that collect results use them.  The judge
therefore refuses, before importing, any graph with such an op -- in its nodes or in any
function of its library -- and any op TensorFlow does not know.

:func:`install` wraps TensorFlow's ``import_graph_def`` in the judge process, so every
import a hidden test makes goes through :func:`refuse_unsafe`.
"""
from __future__ import annotations

import re
from typing import Any

#: Op names that touch files, Python, other processes or devices' memory maps.
UNSAFE_OP = re.compile(r"File|Reader|Save|Restore|Checkpoint|PyFunc|Debug|Dataset|Iterator|Table|Summary|"
                       r"Mmap|ImmutableConst|Socket|Grpc|Rpc|Send$|Recv$|Collective|Nccl|Writer|Matching|"
                       r"ShellExecute|Sleep")
_UNSAFE_TYPES = ("resource",)  # variables, tables, writers; a variant is a TensorList (datasets: by name)


class UnsafeGraph(AssertionError):
    """A learner's graph the judge will not run (the part fails with this message)."""


def _arg_types(op_def: Any, node_attr: Any) -> list[str]:
    import tensorflow as tf

    types = []
    for arg in list(op_def.input_arg) + list(op_def.output_arg):
        if arg.type:
            types.append(tf.dtypes.as_dtype(arg.type).name)
        elif arg.type_attr and arg.type_attr in node_attr and node_attr[arg.type_attr].HasField("type"):
            types.append(tf.dtypes.as_dtype(node_attr[arg.type_attr].type).name)
    return types


def unsafe_ops(graph_def: Any) -> list[str]:
    """The ops of ``graph_def`` (library included) the judge must not run, with why."""
    from tensorflow.python.framework import op_def_registry

    functions = {f.signature.name for f in graph_def.library.function}
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    found = []
    for node in nodes:
        if node.op in functions:
            continue
        op_def = op_def_registry.get(node.op)
        if op_def is None:
            found.append(f"{node.op} (not an op TensorFlow knows)")
        elif UNSAFE_OP.search(node.op):
            found.append(f"{node.op} (files, Python or other processes)")
        elif any(t.startswith(_UNSAFE_TYPES) for t in _arg_types(op_def, node.attr)):
            found.append(f"{node.op} (holds a resource: a variable, table, dataset or iterator)")
    return sorted(set(found))


def refuse_unsafe(graph_def: Any) -> None:
    """Raise :class:`UnsafeGraph` if ``graph_def`` has an op the judge must not run."""
    bad = unsafe_ops(graph_def)
    if bad:
        raise UnsafeGraph("the graph your function ran cannot be checked by running it: it uses "
                          + ", ".join(bad[:5]) + "; use TensorFlow math ops only in this function")


def install() -> None:
    """Make every ``import_graph_def`` in this process (the judge) check its graph first."""
    import tensorflow as tf
    from tensorflow.python.framework import importer

    original = importer.import_graph_def
    if getattr(original, "_guarded", False):
        return

    def import_graph_def(graph_def, *args, **kwargs):
        refuse_unsafe(graph_def)
        return original(graph_def, *args, **kwargs)

    import_graph_def._guarded = True
    importer.import_graph_def = import_graph_def
    for owner in (tf.graph_util, tf.compat.v1, tf.compat.v1.graph_util):
        if getattr(owner, "import_graph_def", None) is original:
            setattr(owner, "import_graph_def", import_graph_def)
