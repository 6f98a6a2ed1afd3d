"""autograder.isolation: a confined process sees only its allowlist, writes only its folder, sees no
other process and no network, and holds no capability.

The probe is forked from this test and confined; what it finds is written, as JSON, to the one
folder it may write.  ``probe_confined`` is also what ``tests/grading/test_unprivileged.py`` runs as
a normal user.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from autograder import isolation
from tests.conftest import ROOT, SOLUTIONS

PROBE = r'''
import json, os, socket, sys
from pathlib import Path

def probe(writable, course_file, outside):
    found = {"pid": os.getpid(), "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
    try:
        found["course_file"] = Path(course_file).read_text()[:80]
    except OSError as exc:
        found["course_file"] = None
    for path in outside:
        try:
            Path(path).write_text("escaped")
        except OSError:
            pass
    Path(writable, "inside.txt").write_text("kept")
    try:
        socket.create_connection(("127.0.0.1", 22), timeout=2).close()
        found["network"] = "connected"
    except OSError as exc:
        found["network"] = type(exc).__name__
    status = Path("/proc/self/status").read_text()
    found["cap_eff"] = next(l.split()[1] for l in status.splitlines() if l.startswith("CapEff"))
    found["root"] = sorted(os.listdir("/"))
    import resource
    found["fsize"] = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return found
'''


def probe_confined(base: Path, course_file: str, outside: list[str]) -> dict:
    """Fork, confine the child in a private root under ``base`` and run the probe there; what it
    found (or ``{"error": ...}``)."""
    writable = base / "work"
    writable.mkdir(parents=True, exist_ok=True)
    spec = isolation.Confinement(root=str(base / "root"), writable=str(writable), file_mb=1)
    child = os.fork()
    if child == 0:
        code = 1
        try:
            isolation.confine(spec)
            namespace: dict = {}
            exec(PROBE, namespace)
            found = namespace["probe"](str(writable), course_file, outside)
            (writable / "found.json").write_text(json.dumps(found))
            code = 0
        except BaseException as exc:  # noqa: B036  (a forked child ends here, whatever happened)
            (writable / "found.json").write_text(json.dumps({"error": repr(exc)}))
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    found = json.loads((writable / "found.json").read_text())
    found["exit"] = os.waitstatus_to_exitcode(status)
    return found


def test_a_confined_process_sees_only_its_allowlist(tmp_path):
    course_file = str(SOLUTIONS / "01_op_logs" / "01_op_logs.ipynb")
    outside = [tmp_path / "outside.txt", ROOT / "planted-by-a-confined-process.txt"]
    found = probe_confined(tmp_path / "c", course_file, [str(p) for p in outside])
    assert found.get("exit") == 0 and "error" not in found, found
    assert found["course_file"] is None, "the course's solutions are readable from the confined process"
    assert not any(p.exists() for p in outside), "a confined process wrote outside its folder"
    assert (tmp_path / "c" / "work" / "inside.txt").read_text() == "kept"
    assert found["pid"] == 1 and found["pids"] == [1], f"other processes are visible: {found['pids']}"
    assert found["network"] != "connected"
    assert int(found["cap_eff"], 16) == 0, f"capabilities kept: {found['cap_eff']}"
    assert found["fsize"] == 2**20
    # the root holds the system folders, /dev, /tmp, /proc and the paths allowed, nothing else
    first = lambda path: path.strip("/").split("/")[0]  # noqa: E731
    expected = {first(p) for p in isolation.SYSTEM_PATHS if os.path.lexists(p)} | {"dev", "tmp", "proc"}
    expected |= {first(p) for p in isolation.python_paths() + [str(tmp_path)]}
    assert set(found["root"]) == expected


def test_the_python_paths_are_the_installation_and_the_package_not_the_checkout():
    paths = isolation.python_paths()
    assert str(ROOT / "autograder") in paths
    assert str(ROOT) not in paths and not any(p.startswith(str(ROOT / "solutions")) for p in paths)
    assert os.path.realpath(sys.prefix) in paths
