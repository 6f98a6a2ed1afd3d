"""Graphs and SavedModels a learner sent, checked before the judge imports, loads or runs them.

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

A SavedModel (exercise 8) is checked the same way before any process loads it
(:func:`refuse_unsafe_savedmodel`, called by :mod:`autograder.checks.savedmodel`): every node of
its graph and every function of its library, with two differences that a served model needs.
Its variables are allowed (the ops that read, assign and create them).  The checkpoint ops
(``RestoreV2``; ``SaveV2``, ``MergeV2Checkpoints``) are allowed only inside the functions that
nothing but the saver's own restore (or save) node reaches: a signature, a function the object
graph lists, or any other node that reaches one of them makes it an ordinary function again.
The loaders then run in a confined process (:func:`autograder.isolation.confine`), so the check
is not the only wall.
"""
from __future__ import annotations

import re
from typing import Any

#: Op names that touch files, Python, other processes or devices' memory maps.  (``DecodeProto``
#: reads a descriptor file when asked, vocabulary and remapping ops read files by name,
#: ``RemoteCall`` runs on another task.)
UNSAFE_OP = re.compile(r"File|Reader|Save|Restore|Checkpoint|PyFunc|Debug|Dataset|Iterator|Table|Summary|"
                       r"Mmap|ImmutableConst|Socket|Grpc|Rpc|Send$|Recv$|Collective|Nccl|Writer|Matching|"
                       r"ShellExecute|Sleep|DecodeProto|EncodeProto|Remote|Vocab|Remap|Barrier|Queue")
_UNSAFE_TYPES = ("resource",)  # variables, tables, writers; a variant is a TensorList (datasets: by name)
#: Where ``tf.print`` may write: a process stream or the log.  Any other ``output_stream`` is a file.
_PRINT_STREAMS = {b"stderr", b"stdout", b"log(info)", b"log(warning)", b"log(error)"}


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


def _node_problem(node: Any, functions: set[str], *, variables: bool = False,
                  also_allowed: frozenset[str] = frozenset()) -> str | None:
    """Why ``node`` must not run, or None.  ``variables``: resource handles of variables are
    allowed (a SavedModel's); ``also_allowed``: op names allowed here although unsafe elsewhere."""
    from tensorflow.python.framework import op_def_registry

    if node.op in functions or node.op in also_allowed:
        return None
    op_def = op_def_registry.get(node.op)
    if op_def is None:
        return f"{node.op} (not an op TensorFlow knows)"
    if UNSAFE_OP.search(node.op):
        return f"{node.op} (files, Python or other processes)"
    if node.op == "PrintV2" and "output_stream" in node.attr and node.attr["output_stream"].s not in _PRINT_STREAMS:
        return f"{node.op} (tf.print to a file: output_stream={node.attr['output_stream'].s.decode(errors='replace')})"
    if any(t.startswith(_UNSAFE_TYPES) for t in _arg_types(op_def, node.attr)):
        if variables and VARIABLE_OP.fullmatch(node.op):
            return None
        return f"{node.op} (holds a resource: a variable, table, dataset or iterator)"
    return None


def unsafe_ops(graph_def: Any) -> list[str]:
    """The ops of ``graph_def`` (library included) the judge must not run, with why."""
    functions = {f.signature.name for f in graph_def.library.function}
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    return sorted({why for node in nodes if (why := _node_problem(node, functions))})


# --- SavedModels ---------------------------------------------------------------------------

#: Ops that take a variable's handle: a SavedModel's variables are its weights.  Calls and
#: control flow pass handles on to functions, which are checked themselves.
VARIABLE_OP = re.compile(r"VarHandleOp|ReadVariableOp|AssignVariableOp|Assign(Add|Sub)VariableOp|VarIsInitializedOp|"
                         r"VariableShape|DisableCopyOnRead|DestroyResourceOp|ResourceGather(Nd)?|"
                         r"ResourceScatter\w+|Resource(Sparse)?Apply\w+|(Stateful)?PartitionedCall|"
                         r"(Stateless)?(If|While|Case)|Identity(N)?|NoOp|Placeholder|_Arg|_Retval")
#: What the functions behind a SavedModel's saver may do besides: restore the weights from the
#: checkpoint beside it, and (the save function, which no loader runs) write one.
RESTORE_OPS = frozenset({"RestoreV2"})
SAVE_OPS = frozenset({"SaveV2", "MergeV2Checkpoints", "ShardedFilename"})


def _callees(nodes: Any, functions: set[str]) -> set[str]:
    """The library functions ``nodes`` call: as their op, or through a function-valued attribute."""
    found = set()
    for node in nodes:
        if node.op in functions:
            found.add(node.op)
        for value in node.attr.values():
            names = [value.func.name] if value.HasField("func") else [f.name for f in value.list.func]
            found.update(name for name in names if name in functions)
    return found


def _reachable(start: set[str], calls: dict[str, set[str]]) -> set[str]:
    seen, todo = set(), list(start)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(calls.get(name, ()))
    return seen


def _node_name(tensor: str) -> str:
    return tensor.lstrip("^").split(":")[0]


def _meta_graph_problems(meta: Any) -> set[str]:
    """Why the ops of one MetaGraph must not run: every node of the graph and of every function,
    variables allowed; the checkpoint ops only in functions that nothing but the saver's own
    restore (or save) node reaches."""
    graph = meta.graph_def
    library = {f.signature.name: f for f in graph.library.function}
    names = set(library)
    calls = {name: _callees(f.node_def, names) for name, f in library.items()}
    restore, save = _node_name(meta.saver_def.restore_op_name), _node_name(meta.saver_def.save_tensor_name)
    by_root = {"restore": set(), "save": set(), "other": set()}
    for node in graph.node:
        reached = _reachable(_callees([node], names), calls)
        for role in [r for r, name in (("restore", restore), ("save", save)) if name == node.name] or ["other"]:
            by_root[role] |= reached
    # The loaders call what the object graph names too (functions, restore functions of saveables).
    listed = set(meta.object_graph_def.concrete_functions)
    for obj in meta.object_graph_def.nodes:
        kind = obj.WhichOneof("kind")
        if kind == "function":
            listed.update(obj.function.concrete_functions)
        elif kind == "bare_concrete_function":
            listed.add(obj.bare_concrete_function.concrete_function_name)
    by_root["other"] |= _reachable(listed & names, calls)
    problems = {why for node in graph.node if (why := _node_problem(node, names, variables=True))}
    for name, function in library.items():
        allowed = frozenset()
        if name not in by_root["other"] and name in by_root["restore"] and name not in by_root["save"]:
            allowed = RESTORE_OPS
        elif name not in by_root["other"] and name in by_root["save"] and name not in by_root["restore"]:
            allowed = SAVE_OPS
        problems.update(why for node in function.node_def
                        if (why := _node_problem(node, names, variables=True, also_allowed=allowed)))
    return problems


def unsafe_savedmodel_ops(saved_model: Any) -> list[str]:
    """The ops of a ``SavedModel`` proto that no loader may run, with why (empty: safe to load)."""
    return sorted({why for meta in saved_model.meta_graphs for why in _meta_graph_problems(meta)})


def refuse_unsafe_savedmodel(export_dir: Any) -> None:
    """Raise :class:`UnsafeGraph` if the SavedModel in ``export_dir`` has an op that reads or writes
    files, calls Python or reaches another process, in any function (the saver's own restore and
    save functions may use the checkpoint beside them), before anything loads it."""
    from pathlib import Path

    from google.protobuf.message import DecodeError
    from tensorflow.core.protobuf import saved_model_pb2

    path = Path(export_dir) / "saved_model.pb"
    saved_model = saved_model_pb2.SavedModel()
    try:
        saved_model.ParseFromString(path.read_bytes())
    except (OSError, DecodeError) as exc:
        raise UnsafeGraph(f"{path.name} could not be read as a SavedModel ({exc}); export it again with "
                          "tf.saved_model.save or model.export") from None
    bad = unsafe_savedmodel_ops(saved_model)
    if bad:
        raise UnsafeGraph("the SavedModel cannot be loaded by the grader: its functions use " + ", ".join(bad[:5])
                          + "; a served model computes with TensorFlow math ops only (no file, Python or "
                          "network ops in the exported function)")


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
