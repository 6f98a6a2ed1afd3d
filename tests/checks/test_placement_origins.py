"""The table of which Python calls produce which ops (autograder.checks.placement_origins)."""
from __future__ import annotations

from autograder.checks import placement, placement_origins
from autograder.checks.placement_origins import ORIGIN_PROBES, OriginProbe, origin_of, probe_ops_missing


def test_origins_come_from_the_probes_and_wildcards_match():
    assert "v.numpy()" in origin_of("ReadVariableOp")
    assert origin_of("__inference_f_123") == origin_of("__inference_*")
    assert origin_of("NoSuchOp") is None
    assert all(probe.ops for probe in ORIGIN_PROBES)


def test_a_probe_is_met_by_either_alternative():
    probe = OriginProbe("call", "code", ("ReadVariableOp", "MatMul|_MklMatMul", "__inference_*"))
    assert probe_ops_missing(probe, {"ReadVariableOp", "_MklMatMul", "__inference_f_7"}) == []
    assert probe_ops_missing(probe, {"MatMul"}) == ["ReadVariableOp", "__inference_*"]


def test_placement_still_offers_every_name():
    for name in ("OriginProbe", "ORIGIN_PROBES", "OP_ORIGINS", "origin_of", "probe_ops_missing"):
        assert getattr(placement, name) is getattr(placement_origins, name)
