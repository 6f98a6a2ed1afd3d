"""Fork servers: a process (a zygote) that did its imports once and forks a fresh child for
each request, so the child skips them (``import tensorflow`` is seconds of CPU).

Two kinds are built on this module: the sandbox's warm workers
(``sandbox/warm_start.py``, zygote ``sandbox/zygote.py``) and warm judges
(``judge/zygote.py``).  The pieces:

- the grader's side: :class:`Zygote` starts one and asks it for children (each with its
  stdin, stdout and stderr as descriptors and exactly the environment and folder it is
  given); :class:`ZygotePool` keeps one zygote per key (an environment, a kind);
  :class:`ForkedProcess` is a child as the grader uses a ``Popen``;
- the zygote's side: :func:`serve` forks per request and answers with the child's pid
  and a pidfd; :func:`become_child` is a child's first act (own session, only its three
  descriptors, the request's environment and folder, :func:`rehome`).

A zygote holds only what it imported before any request: what a child works on reaches it
on the child's own stdin.  A leaf: it imports nothing of the package.
"""
from __future__ import annotations

import ctypes
import gc
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path
from typing import Callable

# The environment names that hold a child's own folders: the zygote's mirror them in a folder of its own.
FOLDER_ENV = ("HOME", "TMPDIR", "MPLCONFIGDIR", "IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_PATH",
              "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR")
START_TIMEOUT_S = 180.0
KERNELS_ENV = "AUTOGRADER_KERNELS"  # "cold": every worker, kernel and judge a fresh interpreter
_libc = ctypes.CDLL(None, use_errno=True)


def warm_enabled() -> bool:
    """Children forked by zygotes unless ``AUTOGRADER_KERNELS=cold`` (the benchmarks' "before")."""
    return os.environ.get(KERNELS_ENV, "warm").strip().lower() != "cold"


def set_process_name(name: str) -> None:
    """This process's name as ps and psutil show it (``PR_SET_NAME``, 15 bytes at most)."""
    _libc.prctl(15, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


def close_fds_except(keep: set[int]) -> None:
    """Close every descriptor of this process but ``keep`` (a forked child's first act).

    (Never ``closerange(n, n)``: CPython passes an empty range on to ``close_range`` as
    ``[n, UINT_MAX]``, which closes everything.)"""
    edges = sorted(fd for fd in keep if fd >= 0)
    low = 0
    for fd in edges:
        if low < fd:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


def runtime_started() -> bool:
    """Whether TensorFlow's runtime (its eager context: devices, thread pools, a GPU's CUDA
    context) has started in this process.  A zygote must fork before it does: each child
    starts its own, as a fresh interpreter's would."""
    if "tensorflow" not in sys.modules:
        return False
    from tensorflow.python.eager import context

    made = getattr(context, "_context", None)  # looked at, not made: context.context() would make one
    return made is not None and getattr(made, "_context_handle", None) is not None


# --- folders the imports remembered ---------------------------------------------------------


def _remembered(value, old: str) -> bool:
    """Whether ``value`` is a path under the folder ``old`` (``old`` itself included)."""
    return isinstance(value, str) and (value == old or value.startswith(old + "/"))


def _rehomed(value, old: str, new: str):
    """``value`` with a leading ``old`` replaced by ``new`` (strings only), else ``value``."""
    return new + value[len(old):] if _remembered(value, old) else value


def _closure_cells(function: types.FunctionType) -> list:
    """The closure cells of ``function`` and of what it wraps (a cache's wrapper keeps the value)."""
    cells = list(function.__closure__ or ())
    inner = getattr(function, "__wrapped__", None)
    if isinstance(inner, types.FunctionType):
        cells += inner.__closure__ or ()
    return cells


def remembered_places(old: str) -> list[tuple]:
    """Where the imports keep a path under ``old``: ``(container, key)`` pairs (a module's
    globals and a name, a list and an index, a dict and a key, a closure cell and ``None``),
    and a module's globals and a name for a tuple holding one.  Found by walking every
    module (a few tenths of a second with TensorFlow imported), so a zygote walks once,
    before it forks (:func:`serve`), and each child moves just these (:func:`rehome`)."""
    places = []
    for module in list(sys.modules.values()):
        try:
            names = vars(module)
        except TypeError:
            continue
        for name, value in list(names.items()):
            if isinstance(value, str):
                if _remembered(value, old):
                    places.append((names, name))
            elif type(value) is tuple:
                if any(_remembered(v, old) for v in value):
                    places.append((names, name))
            elif isinstance(value, list):
                places += [(value, i) for i, item in enumerate(value) if _remembered(item, old)]
            elif isinstance(value, dict):
                places += [(value, key) for key, item in list(value.items()) if _remembered(item, old)]
            elif isinstance(value, types.FunctionType):
                for cell in _closure_cells(value):
                    try:
                        item = cell.cell_contents
                    except ValueError:  # an empty cell
                        continue
                    if _remembered(item, old):
                        places.append((cell, None))
    return places


def _move(container, key, old: str, new: str) -> bool:
    """Point the path kept at ``container[key]`` (a cell's contents when ``key`` is None) at ``new``."""
    if isinstance(container, types.CellType):
        try:
            item = container.cell_contents
        except ValueError:
            return False
        if (moved := _rehomed(item, old, new)) is item:
            return False
        container.cell_contents = moved
        return True
    try:
        item = container[key]
    except (KeyError, IndexError, TypeError):
        return False
    if type(item) is tuple:
        moved = tuple(_rehomed(v, old, new) for v in item)
        if all(a is b for a, b in zip(moved, item)):
            return False
    elif (moved := _rehomed(item, old, new)) is item:
        return False
    if isinstance(container, dict):
        dict.__setitem__(container, key, moved)  # as stored: no validating __setitem__
    else:
        container[key] = moved
    return True


class _Plan(types.SimpleNamespace):
    """The zygote's walk (:func:`plan_rehome`): its folder, how many modules were loaded, the
    places.  Not a tuple or dict, which a walk would look into and move the folder of."""


_PLAN: _Plan | None = None


def plan_rehome(old: str) -> None:
    """In a zygote, once its imports are done: find the places :func:`rehome` will move."""
    global _PLAN
    _PLAN = _Plan(old=old, modules=len(sys.modules), places=remembered_places(old)) if old else None


def rehome(old: str, new: str) -> int:
    """Point what the imports remembered of the zygote's folder at this child's.

    Importing TensorFlow reads ``HOME``, ``TMPDIR`` and ``MPLCONFIGDIR`` and keeps what it
    found: ``tempfile.tempdir``, Keras's and matplotlib's folders (some in closures), the user
    site.  The zygote's folders mirror a child's (``HOME=F``, ``TMPDIR=F/.tmp``...), so
    each such path becomes the child's by its prefix: module globals that are strings,
    strings in a module's lists, tuples and dicts, and strings in module functions' closures.
    The places are the zygote's walk when it made one for ``old`` with the modules loaded now,
    else a walk here.  Returns how many were changed (``tests/sandbox/test_warm_start.py``
    scans a warm kernel for any left)."""
    planned = _PLAN is not None and _PLAN.old == old and _PLAN.modules == len(sys.modules)
    places = _PLAN.places if planned else remembered_places(old)
    return sum(_move(container, key, old, new) for container, key in places)


# --- the zygote's side ------------------------------------------------------------------------


def become_child(request: bytes, fds: list[int], name: str, preloaded_env: dict[str, str] | None = None) -> dict:
    """In a forked child: lead a session of its own named ``name``, take the three descriptors
    as 0, 1, 2 and nothing else, exactly the request's environment (plus ``preloaded_env``,
    what the zygote's imports set) and folder; returns the request."""
    os.setsid()
    set_process_name(name)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
    close_fds_except({0, 1, 2})
    launch = json.loads(request)
    zygote_home = os.environ.get("HOME", "")
    os.environ.clear()
    os.environ.update(launch["env"])
    for key, value in (preloaded_env or {}).items():
        os.environ.setdefault(key, value)
    os.chdir(launch["cwd"])
    if zygote_home and launch["env"].get("HOME"):
        rehome(zygote_home, launch["env"]["HOME"])
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    return launch


def run_child(body: Callable[[], int]) -> None:
    """A forked child's whole life: ``body()``, its traceback on stderr if it raised; never returns."""
    code = 1
    try:
        code = body()
    except BaseException:  # noqa: B036  (a child must end here, whatever happened)
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(sock: socket.socket, child: Callable[[bytes, list[int]], None]) -> int:
    """Fork ``child(request, fds)`` (which never returns) for each request on ``sock`` until it
    closes; answer each with the child's pid and a pidfd.  Call once the imports are done."""
    if runtime_started():
        print("the zygote's imports started TensorFlow's runtime; a fork would share it (a GPU's "
              "context cannot be): refusing to serve", file=sys.stderr, flush=True)
        return 1
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped as they end
    plan_rehome(os.environ.get("HOME", ""))
    # What the imports made is kept for good: out of the collector's sight, a child's collections
    # do not walk (and copy, page by page) the 300,000 objects TensorFlow brings: 0.17 s each.
    gc.collect()
    gc.freeze()
    sock.send(b"ready")
    while True:
        try:
            request, fds, _, _ = socket.recv_fds(sock, 1 << 22, 3)
        except OSError:
            return 0
        if not request:
            return 0
        try:
            pid = os.fork()
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": str(exc)}).encode())
            continue
        if pid == 0:
            sock.detach()
            child(request, fds)
        for fd in fds:
            os.close(fd)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError as exc:
            sock.send(json.dumps({"error": f"pidfd_open: {exc}"}).encode())
            continue
        socket.send_fds(sock, [json.dumps({"pid": pid}).encode()], [pidfd])
        os.close(pidfd)


def run_zygote(argv: list[str], name: str, preload: Callable[[], None],
               child: Callable[[bytes, list[int]], None], preloaded_env: dict[str, str]) -> int:
    """A zygote's life: its request socket is descriptor ``argv[0]``; named ``name``, it runs
    ``preload()`` (what that sets in ``os.environ`` goes into ``preloaded_env``, for the
    children), then forks ``child`` per request (:func:`serve`)."""
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # the zygote's own folder (/), as ipykernel_launcher drops the kernel's
    sock = socket.socket(fileno=int(argv[0]))
    set_process_name(name)
    before = dict(os.environ)
    preload()
    preloaded_env.update({k: v for k, v in os.environ.items() if before.get(k) != v})
    return serve(sock, child)


# --- the grader's side ------------------------------------------------------------------------


class ForkedProcess:
    """A child a zygote forked, as the grader uses a ``Popen``: ``pid``, ``stdin``, ``stdout``,
    ``poll``, ``wait``, ``kill``.  Its exit is seen through a pidfd (the zygote reaps it).

    Safe to use from several threads (the owner waits on it while its pool asks whether it
    still runs): the pidfd is closed once, under a lock, and never polled after."""

    def __init__(self, pid: int, pidfd: int, stdin, stdout) -> None:
        self.pid, self.pidfd, self.stdin, self.stdout = pid, pidfd, stdin, stdout
        self.returncode: int | None = None
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        return self._wait(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._wait(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"process {self.pid}", timeout)
        return code

    def running(self) -> bool:
        """Whether it has not ended (closes nothing: its owner may be reading its pipes)."""
        with self._lock:
            return self.returncode is None and not self._ended_now(0)

    def kill(self) -> None:
        with self._lock:
            if self.returncode is None:
                try:
                    signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
                except OSError:
                    pass  # already gone

    def _ended_now(self, timeout_ms: int) -> bool:
        poller = select.poll()  # not select(): a busy grader's descriptors may pass FD_SETSIZE
        poller.register(self.pidfd, select.POLLIN)
        return bool(poller.poll(timeout_ms))

    def _wait(self, timeout: float | None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = 0.05 if deadline is None else max(0.0, min(0.05, deadline - time.monotonic()))
            with self._lock:  # in slices, so running() and kill() from other threads wait little
                if self.returncode is not None:
                    return self.returncode
                if self._ended_now(int(left * 1000)):
                    self.returncode = 0  # reaped by the zygote: only "ended" is known
                    os.close(self.pidfd)
                    for stream in (self.stdin, self.stdout):
                        try:
                            stream.close()
                        except OSError:
                            pass
                    return self.returncode
            if deadline is not None and time.monotonic() >= deadline:
                return None


class Zygote:
    """One zygote process and the socket it takes requests on."""

    def __init__(self, command: Callable[[int], list[str]], env: dict[str, str], cwd: Path, prefix: str,
                 what: str = "zygote") -> None:
        """``command(fd)`` starts the zygote, its request socket on descriptor ``fd``; ``env`` is a
        child's in ``cwd``: the zygote's folders mirror it (see :func:`rehome`) in a folder named
        ``prefix...`` beside ``cwd``.  ``what`` names it in errors."""
        self.what = what
        self.folder = Path(tempfile.mkdtemp(prefix=prefix, dir=cwd.parent))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        zygote_env = dict(env)
        for name in FOLDER_ENV:
            value = zygote_env.get(name, "")
            if value == str(cwd) or value.startswith(str(cwd) + "/"):
                zygote_env[name] = str(self.folder) + value[len(str(cwd)):]
                Path(zygote_env[name]).mkdir(parents=True, exist_ok=True)
        self.log_path = self.folder / "zygote.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(command(theirs.fileno()), pass_fds=(theirs.fileno(),),
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/",
                                         env=zygote_env, start_new_session=True)
        theirs.close()
        self.sock = ours
        self.lock = threading.Lock()
        self.children: list[ForkedProcess] = []  # what it forked through its pool, while they run
        self.pending = 0  # spawns its pool has handed it and it has not answered yet (pool's lock)
        self.ready = False  # its imports are done (it said so); the first spawn waits for that

    def _wait_ready(self) -> None:
        """Wait (under ``self.lock``) until the zygote says its imports are done: it starts
        without waiting, so two zygotes (a worker's and a judge's) import side by side.
        OSError if it never says so."""
        if self.ready:
            return
        self.sock.settimeout(START_TIMEOUT_S)
        try:
            ready = self.sock.recv(64)
        except OSError:
            ready = b""
        if ready != b"ready":
            raise OSError(f"the {self.what} did not start: {self.log_tail()}")
        self.sock.settimeout(30.0)
        self.ready = True

    def alive(self) -> bool:
        return self.proc.poll() is None

    def busy(self) -> bool:
        """Whether a child of its still runs or one is being forked: closing it would kill them
        (a judge dies with its parent).  Its pool asks, under the pool's lock."""
        self.children = [child for child in self.children if child.running()]
        return bool(self.children) or self.pending > 0

    def spawn(self, cwd: Path, env: dict[str, str], stderr) -> ForkedProcess:
        """A new child in ``cwd`` with exactly ``env``, its stderr on ``stderr``."""
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            with self.lock:
                self._wait_ready()
                socket.send_fds(self.sock, [json.dumps({"cwd": str(cwd), "env": env}).encode()],
                                [in_r, out_w, stderr.fileno()])
                reply, fds, _, _ = socket.recv_fds(self.sock, 4096, 1)
        except OSError:
            for fd in (in_w, out_r):
                os.close(fd)
            raise
        finally:
            os.close(in_r)
            os.close(out_w)
        answer = json.loads(reply or b"{}")
        if not fds or "pid" not in answer:
            for fd in [*fds, in_w, out_r]:
                os.close(fd)
            raise OSError(f"the {self.what} could not fork: {answer.get('error', 'no answer')}")
        return ForkedProcess(answer["pid"], fds[0], os.fdopen(in_w, "wb"), os.fdopen(out_r, "rb"))

    def log_tail(self) -> str:
        try:
            return self.log_path.read_bytes()[-1500:].decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self) -> None:
        self.sock.close()  # the zygote ends at end of file; its children die with it
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def env_key(env: dict[str, str]) -> tuple:
    """What makes two children's environments one zygote's: all but their own folders."""
    return tuple(sorted((k, v) for k, v in env.items() if k not in FOLDER_ENV))


class ZygotePool:
    """One zygote per key, at most ``size`` of them idle: the least recently used idle one is
    closed first.  A zygote whose children still run is never closed to make room (they would
    die with it): the pool is over its size until they end."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.zygotes: dict[tuple, Zygote] = {}  # least recently used first
        self.lock = threading.Lock()

    def spawn(self, key: tuple, start: Callable[[], Zygote], cwd: Path, env: dict[str, str],
              stderr) -> ForkedProcess:
        """A child of the zygote for ``key`` (started by ``start()`` on first use).  OSError when
        none can start or fork (the caller starts a fresh interpreter instead)."""
        with self.lock:
            zygote = self._live(key, start)
            zygote.pending += 1
            over = len(self.zygotes) - self.size
            evicted = []
            for old_key in list(self.zygotes)[:-1]:
                if over <= 0:
                    break
                if not self.zygotes[old_key].busy():
                    evicted.append(self.zygotes.pop(old_key))
                    over -= 1
        for old in evicted:
            old.close()
        try:
            child = zygote.spawn(cwd, env, stderr)
        except OSError:
            with self.lock:
                zygote.pending -= 1
                if self.zygotes.get(key) is zygote:
                    del self.zygotes[key]
            zygote.close()
            raise
        with self.lock:
            zygote.pending -= 1
            zygote.children.append(child)
        return child

    def _live(self, key: tuple, start: Callable[[], Zygote]) -> Zygote:
        """(Under the pool's lock.) The running zygote for ``key``, now the most recently used;
        one that has ended is closed and ``start()`` (which does not wait for its imports) replaces it."""
        zygote = self.zygotes.pop(key, None)
        if zygote is not None and not zygote.alive():
            zygote.close()
            zygote = None
        if zygote is None:
            zygote = start()
        self.zygotes[key] = zygote
        return zygote

    def prestart(self, key: tuple, start: Callable[[], Zygote]) -> None:
        """Start the zygote for ``key`` now, without waiting for its imports, if there is none:
        a later :meth:`spawn` finds it started.  Never raises (that spawn reports the problem)."""
        with self.lock:
            try:
                self._live(key, start)
            except OSError:
                pass

    def close_all(self) -> None:
        """Stop every zygote (at exit, on Ctrl-C)."""
        with self.lock:
            zygotes = list(self.zygotes.values())
            self.zygotes.clear()
        for zygote in zygotes:
            zygote.close()
