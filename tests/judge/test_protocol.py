"""The typed messages: each reader accepts only the messages it expects, with exact field types."""
from __future__ import annotations

import json

import pytest

from autograder.judge import protocol as p


def test_messages_round_trip():
    for message in (p.Start(["x = 1"], "/tmp"), p.Part("g", "src"), p.Probe("call", "f", "[]"),
                    p.ProbeResult("{}", 0.5), p.Verdict("passed", "ok"), p.Test("g", ""), p.Serve(), p.End(),
                    p.PartResult("g", 1.0, 2.0, "out", "visible", "failed"), p.Done("", {"network": "x"}, None)):
        assert p.decode(p.encode(message), type(message)) == message


@pytest.mark.parametrize("line, expected", [
    ("nonsense", (p.Verdict,)),
    (json.dumps({"type": "Verdict", "status": "passed"}), (p.Verdict,)),             # a field missing
    (json.dumps({"type": "Verdict", "status": "passed", "message": 1}), (p.Verdict,)),  # wrong type
    (json.dumps({"type": "Verdict", "status": "full marks", "message": ""}), (p.Verdict,)),  # unknown status
    (json.dumps({"type": "Verdict", "status": "passed", "message": "", "score": 9}), (p.Verdict,)),  # extra
    (p.encode(p.Verdict("passed", "")), (p.Probe,)),                                 # not what is expected
    (json.dumps({"type": "Probe", "op": "exec_anything", "code": "", "args": ""}), (p.Probe,)),
    (json.dumps({"type": "Done", "note": "", "sandbox": []}), (p.Done,)),
])
def test_anything_else_is_a_protocol_error(line, expected):
    with pytest.raises(p.ProtocolError):
        p.decode(line, *expected)
