"""Fork servers (``autograder/forking.py``): what a forked child keeps and what it is pointed at.
The zygotes built on it are tested with their users: ``tests/sandbox/test_warm_start.py`` (sandbox
workers) and ``tests/judge/test_zygote.py`` (judges)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import types

from autograder import forking
from tests.conftest import ROOT


def test_a_forked_process_is_killed_and_seen_to_end():
    pid = os.fork()
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    read, write = os.pipe()
    child = forking.ForkedProcess(pid, os.pidfd_open(pid), os.fdopen(write, "wb"), os.fdopen(read, "rb"))
    assert child.poll() is None
    child.kill()
    os.waitpid(pid, 0)  # here the parent reaps it (in a zygote, SIGCHLD is ignored)
    assert child.wait(timeout=10) == 0 and child.stdin.closed and child.stdout.closed
    child.kill()  # after its end: nothing happens


def test_rehome_moves_remembered_folders_and_nothing_else():
    module = types.ModuleType("ag_rehome_probe")
    old, new = "/tmp/autograder-zygote-x", "/tmp/autograder-sandbox-1"

    def cached():
        return folder

    def make_wrapper(func):
        remembered = old + "/.cache"

        def wrapper():
            return remembered
        wrapper.__wrapped__ = func
        return wrapper

    folder = old + "/.tmp/matplotlib"
    wrapped = make_wrapper(cached)
    module.__dict__.update(home=old, tmp=old + "/.tmp", elsewhere="/tmp/autograder-zygote-xy/other",
                           dirs=[old + "/.fonts", "/usr/share/fonts"], pair=(old, 3), config={"dir": old + "/.keras"},
                           cached=cached, wrapped=wrapped)
    sys.modules[module.__name__] = module
    try:
        changed = forking.rehome(old, new)
    finally:
        del sys.modules[module.__name__]
    assert module.home == new and module.tmp == new + "/.tmp"
    assert module.elsewhere == "/tmp/autograder-zygote-xy/other"  # a prefix of a name, not of a path
    assert module.dirs == [new + "/.fonts", "/usr/share/fonts"] and module.pair == (new, 3)
    assert module.config == {"dir": new + "/.keras"} and cached() == new + "/.tmp/matplotlib"
    assert wrapped() == new + "/.cache"
    assert changed >= 7


def test_a_planned_rehome_moves_the_places_the_zygote_found_and_walks_when_modules_changed(monkeypatch):
    old, new = "/tmp/autograder-zygote-p", "/tmp/autograder-sandbox-2"
    first, later = types.ModuleType("ag_rehome_first"), types.ModuleType("ag_rehome_later")
    first.__dict__.update(home=old, dirs=[old + "/.fonts"], pair=(old, 1), config={"dir": old + "/.keras"})
    later.home = old + "/.later"
    sys.modules[first.__name__] = first
    try:
        forking.plan_rehome(old)
        planned = forking._PLAN.places
        assert (first.__dict__, "home") in planned and (first.dirs, 0) in planned and (first.config, "dir") in planned

        def no_walk(folder):
            raise AssertionError("rehome walked the modules although the zygote had planned it")
        monkeypatch.setattr(forking, "remembered_places", no_walk)
        assert forking.rehome(old, new) == 4
        assert first.home == new and first.dirs == [new + "/.fonts"] and first.pair == (new, 1)
        assert first.config == {"dir": new + "/.keras"}
        assert forking.rehome(old, new) == 0  # already moved: nothing twice
        monkeypatch.undo()
        sys.modules[later.__name__] = later  # a module loaded after the plan: rehome walks again
        assert forking.rehome(old, new) == 1 and later.home == new + "/.later"
    finally:
        forking._PLAN = None
        sys.modules.pop(first.__name__, None)
        sys.modules.pop(later.__name__, None)


def test_close_fds_except_keeps_exactly_what_it_is_told():
    script = textwrap.dedent(f'''
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from autograder.forking import close_fds_except
        a, b = os.pipe()
        c = os.open(os.devnull, os.O_RDONLY)
        close_fds_except({{0, 1, 2, b}})
        os.write(1, (" ".join(sorted(os.listdir("/proc/self/fd"))) + "\\n").encode())
    ''')
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    fds = set(out.stdout.split())
    assert {"0", "1", "2"} <= fds, out.stderr
    assert len(fds - {"0", "1", "2"}) == 2, fds  # b, and the listing's own descriptor


_CHILD_DIES_WITH_ZYGOTE = textwrap.dedent(f'''
    import ctypes, signal, socket, sys
    sys.path.insert(0, {str(ROOT)!r})
    from autograder import forking

    def child(request, fds):
        def body():
            forking.become_child(request, fds, "ag-test-child")
            ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG, as a judge does
            sys.stdout.write("up\\n")
            sys.stdout.flush()
            sys.stdin.read()  # until its stdin closes
            return 0
        forking.run_child(body)

    raise SystemExit(forking.serve(socket.socket(fileno=int(sys.argv[1])), child))
''')


def _child_of(pool: forking.ZygotePool, key: str, tmp_path) -> forking.ForkedProcess:
    cwd = tmp_path / key
    cwd.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd), "KEY": key}
    log = open(tmp_path / f"{key}.log", "wb")
    child = pool.spawn((key,), lambda: forking.Zygote(lambda fd: [sys.executable, "-c", _CHILD_DIES_WITH_ZYGOTE, str(fd)],
                                                      env, cwd, f"ag-test-zygote-{key}-"), cwd, env, log)
    assert child.stdout.readline() == b"up\n"
    return child


def test_a_full_pool_never_closes_a_zygote_whose_children_still_run(tmp_path):
    """A judge dies with its zygote (PR_SET_PDEATHSIG): a pool that closed its least recently used
    zygote to start another killed a judge another thread was grading with."""
    pool = forking.ZygotePool(1)
    try:
        first = _child_of(pool, "a", tmp_path)
        second = _child_of(pool, "b", tmp_path)  # a second environment: the pool is over its size
        try:
            first.wait(timeout=1.0)
            raise AssertionError("the first zygote's child died when the pool started a second zygote")
        except subprocess.TimeoutExpired:
            pass
        first.stdin.close()  # the first child ends; its zygote may go now
        assert first.wait(timeout=30) == 0
        third = _child_of(pool, "c", tmp_path)
        assert ("a",) not in pool.zygotes, "an idle zygote over the pool's size was kept"
        assert second.poll() is None and third.poll() is None
    finally:
        pool.close_all()


_WAITS_FOR_A_FILE = textwrap.dedent(f'''
    import os, socket, sys, time
    sys.path.insert(0, {str(ROOT)!r})
    from autograder import forking

    def child(request, fds):
        forking.run_child(lambda: (forking.become_child(request, fds, "ag-test-child"), 0)[1])

    while not os.path.exists(sys.argv[2]):  # its "imports": done when the test says so
        time.sleep(0.05)
    raise SystemExit(forking.serve(socket.socket(fileno=int(sys.argv[1])), child))
''')


def test_prestart_does_not_wait_for_the_imports_and_spawn_uses_that_zygote(tmp_path):
    """The grader starts the worker's zygote, then the judge's: their imports run side by side only
    if the first start returns before its zygote is ready."""
    flag, cwd = tmp_path / "imports-done", tmp_path / "cwd"
    cwd.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd)}
    starts: list[forking.Zygote] = []

    def start():
        starts.append(forking.Zygote(lambda fd: [sys.executable, "-c", _WAITS_FOR_A_FILE, str(fd), str(flag)],
                                     env, cwd, "ag-test-zygote-pre-"))
        return starts[-1]

    pool = forking.ZygotePool(1)
    try:
        pool.prestart(("k",), start)  # returns although the zygote cannot be ready: the flag is missing
        assert len(starts) == 1 and starts[0].alive() and not starts[0].ready
        pool.prestart(("k",), start)  # one is there: nothing new
        assert len(starts) == 1
        flag.write_text("")
        with open(tmp_path / "child.log", "wb") as log:
            child = pool.spawn(("k",), start, cwd, env, log)
        assert child.wait(timeout=30) == 0
        assert len(starts) == 1 and starts[0].ready, "spawn started a second zygote instead of the prestarted one"
    finally:
        pool.close_all()


def test_a_prestarted_zygote_that_never_gets_ready_fails_its_first_spawn(tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd)}
    pool = forking.ZygotePool(1)
    start = lambda: forking.Zygote(lambda fd: [sys.executable, "-c", "import sys; sys.exit('no imports here')"],  # noqa: E731
                                   env, cwd, "ag-test-zygote-dead-", what="test zygote")
    try:
        pool.prestart(("k",), start)  # does not raise: the spawn reports it
        with open(tmp_path / "child.log", "wb") as log:
            try:
                pool.spawn(("k",), start, cwd, env, log)
                raise AssertionError("a spawn from a zygote that never got ready succeeded")
            except OSError as exc:
                assert "test zygote did not start" in str(exc) and "no imports here" in str(exc)
        assert ("k",) not in pool.zygotes
    finally:
        pool.close_all()


_REPORTS_FROZEN = textwrap.dedent(f'''
    import gc, json, socket, sys
    sys.path.insert(0, {str(ROOT)!r})
    from autograder import forking
    import email.parser, decimal  # the zygote's "imports"

    def child(request, fds):
        def body():
            forking.become_child(request, fds, "ag-test-child")
            made = [[] for _ in range(10)]  # the child's own objects stay collectable
            print(json.dumps({{"frozen": gc.get_freeze_count(), "tracked_made": gc.is_tracked(made),
                               "made_in_a_generation": any(o is made for o in gc.get_objects())}}), flush=True)
            return 0
        forking.run_child(body)

    raise SystemExit(forking.serve(socket.socket(fileno=int(sys.argv[1])), child))
''')


def test_a_zygotes_imports_are_frozen_for_its_children_and_theirs_are_collected(tmp_path):
    """``gc.freeze`` before the first fork: a child's collections skip what the zygote imported
    (with TensorFlow, 300,000 objects: 0.17 s a full collection, copying pages)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd)}
    pool = forking.ZygotePool(1)
    try:
        with open(tmp_path / "child.log", "wb") as log:
            child = pool.spawn(("f",), lambda: forking.Zygote(lambda fd: [sys.executable, "-c", _REPORTS_FROZEN, str(fd)],
                                                              env, cwd, "ag-test-zygote-f-"), cwd, env, log)
            report = json.loads(child.stdout.readline())
            assert child.wait(timeout=30) == 0
    finally:
        pool.close_all()
    assert report["frozen"] > 10_000, report  # the imports (decimal, email, the package): tens of thousands
    assert report["tracked_made"] and report["made_in_a_generation"], report
