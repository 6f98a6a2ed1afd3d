"""Reading the placement log (autograder.checks.placement_log), without TensorFlow."""
from __future__ import annotations

from autograder.checks import placement, placement_log
from autograder.checks.placement_log import is_placement_line, normalize_device, parse_log, same_device, short_device

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def test_any_spelling_of_a_device_is_the_same_device():
    assert normalize_device("CPU:0") == CPU0
    assert normalize_device("/device:GPU:1") == "/job:localhost/replica:0/task:0/device:GPU:1"
    assert short_device(CPU0) == "CPU:0"
    assert same_device("/cpu:0", CPU0)
    assert not same_device("GPU:0", CPU0)


def test_a_prefixed_copy_of_a_line_wins_over_the_bare_one():
    bare = f"Executing op MatMul in device {CPU0}"
    prefixed = f"I0000 00:00:1796015065.143083    3358 execute.cc:1775] {bare}"
    graph = f"mul: (Mul): {CPU0}"
    records = parse_log("\n".join([bare, prefixed, graph, "unrelated text"]))
    assert [(r.op_type, r.kind, r.short_device) for r in records] == [("MatMul", "eager", "CPU:0"), ("Mul", "graph", "CPU:0")]
    assert records[1].node_name == "mul"
    assert is_placement_line(bare) and not is_placement_line("unrelated text")


def test_placement_still_offers_every_name():
    for name in ("parse_log", "PlacementRecord", "normalize_device", "_parse_line", "VARIABLE_OPS", "PLUMBING_OPS"):
        assert getattr(placement, name) is getattr(placement_log, name)
