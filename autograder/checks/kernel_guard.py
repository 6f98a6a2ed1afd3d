"""An audit hook in the learner's kernel that refuses the introspection attacks need.

:func:`install` adds a PEP 578 audit hook (``sys.addaudithook``; Python has no
way to remove one).  The sandbox installs it in the grader's first cell, before
any learner cell runs.  It decides *who* asks by the calling frames: code from
a file of the Python installation (standard library, site-packages: TensorFlow,
Keras, IPython, NumPy) or of this ``autograder`` package is **trusted**;
everything else -- notebook cells (ipykernel compiles them to
``$TMPDIR/ipykernel_<pid>/<hash>.py``), ``exec``'d strings, modules in the
submission's folder, autograph's generated files -- is **learner code**.  A
few standard modules only pass a request on (``inspect``, ``traceback``,
``functools``, ``contextlib``, ``threading``, ``ctypes``, ``importlib``,
``runpy``, ``pickle``, ``weakref``, ``asyncio``, ``concurrent.futures``,
``unittest.mock``, ``code``/``codeop``, ``copy``/``copyreg``, ``operator``):
they are skipped, so the *effective caller* is the first other frame.  A
request whose effective caller is learner code, or that has none (a thread
whose target is the function itself), is refused with ``RuntimeError``
("integrity: ...") and recorded; the sandbox's integrity report lists what was
recorded, so the part scores 0 even if the notebook catches the error.

Refused (CPython 3.11 audit events; the event table in the ``sys`` docs):

* ``gc.get_objects`` whenever learner code is anywhere on the stack or the
  effective caller is not trusted (TensorFlow, Keras and IPython never call it
  while running); ``gc.get_referrers`` and ``gc.get_referents`` from learner code;
* ``sys._getframe`` (so ``inspect.currentframe``/``inspect.stack``) and
  ``sys._current_frames`` from learner code -- TensorFlow, Keras, IPython,
  ``logging``, ``collections.namedtuple`` and ``typing`` call ``sys._getframe``
  themselves, which is allowed;
* reading a traceback's, generator's, coroutine's or async generator's frame
  (``tb_frame``, ``gi_frame``, ``cr_frame``, ``ag_frame``: the ``object.__getattr__``
  event) from learner code, ``traceback.walk_tb`` and ``walk_stack`` included; the
  traceback module's text-only functions (``format_exc``, ``print_exception``...:
  :data:`TEXT_ONLY_TRACEBACK`) may read them for anyone, since they give back no frame;
* every ``ctypes.*`` event (``dlopen``, ``dlsym``, ``addressof``, ``cdata``
  (``from_address``), ``string_at``, ``call_function``...) from learner code;
* ``sys.settrace``, ``sys.setprofile`` (and so ``threading.settrace`` once a
  thread starts) and ``sys.addaudithook`` from learner code;
* the attribute writes Python audits (``object.__setattr__``/``__delattr__``)
  when learner code makes them on an object it did not create: ``__code__``,
  ``__defaults__`` and ``__kwdefaults__`` of a trusted function; ``__name__``,
  ``__qualname__``, ``__module__``, ``__doc__`` and ``__bases__`` of a class not
  defined in the notebook (or its folder); ``__class__`` of a module or of an
  instance of such a class (a module ``__class__`` swap);
* code that claims a trusted file: ``compile``/``exec`` of source, or
  ``code.__new__``/``code.replace``, naming a file of the Python installation or
  of this package or a ``<frozen ...>`` module, from learner code; and opening a
  compiled ``.pyc`` outside the trusted folders (a shipped ``.pyc`` could carry
  such names; a module's own ``__pycache__`` file is refused silently and the
  import uses its ``.py`` source).

NOT refused, because CPython 3.11 raises no audit event for them (checked by
``tests/checks/test_kernel_guard.py``):

* ordinary attribute writes on classes and modules: ``SomeClass.method = f``,
  ``setattr(cls, ...)``, ``del cls.attr``, ``module.function = f`` -- class
  patches of IPython's ``TransformerManager``, ``CachingCompiler`` or
  ``jupyter_client.Session`` and rebinding ``numpy._core.numeric.less_equal``
  are only caught where the integrity snapshot records the object;
* ``signal.signal``, ``signal.alarm``, ``signal.setitimer``: a signal handler
  receives the interrupted frame;
* a frame's ``f_back``, ``f_locals`` and ``f_globals`` (only ``f_code`` is audited),
  a function's ``__closure__`` and ``__globals__`` (so the integrity report in
  ``builtins`` and the snapshot its closure holds), ``vars(builtins)``, the
  user namespace (``globals()``), ``kernel.get_parent()`` and IPython's history;
* raw memory through NumPy (``np.lib.stride_tricks.as_strided``, buffers).

And a trusted function that calls a callable it is given (``tf.nest.map_structure``,
``sorted(key=...)`` is C and so fine) can still call ``sys._getframe`` or
``gc.get_referrers`` on the learner's behalf: the hook then sees a trusted
caller.  Likewise importlib's own functions, called directly, still compile
code under any file name (the hook lets imports compile), and a trusted
function's code can be run with the learner's globals
(``types.FunctionType(code, globals)`` raises no event).  This is a lock on the
doors Python can watch, not a sandbox.
"""
from __future__ import annotations

import os
import sys
import sysconfig
import threading
import types
from typing import Any, Callable, Iterable

#: Events refused from learner code; the ``ctypes.`` prefix is matched too.
FRAME_EVENTS = frozenset({"sys._getframe", "sys._current_frames"})
TRACE_EVENTS = frozenset({"sys.settrace", "sys.setprofile", "sys.addaudithook"})
GC_EVENTS = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents"})
FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
WATCHED = FRAME_EVENTS | TRACE_EVENTS | GC_EVENTS | frozenset(
    {"object.__getattr__", "object.__setattr__", "object.__delattr__", "compile", "code.__new__", "open",
     "marshal.loads"})
# Standard-library modules that only pass a request on (relative to the stdlib folder).
FORWARDER_FILES = frozenset({"inspect.py", "traceback.py", "functools.py", "contextlib.py", "threading.py",
                             "operator.py", "runpy.py", "codeop.py", "code.py", "copy.py", "copyreg.py",
                             "pickle.py", "weakref.py", os.path.join("unittest", "mock.py")})
FORWARDER_DIRS = ("ctypes", os.path.join("concurrent", "futures"), "asyncio", "importlib")
FORWARDER_FROZEN = frozenset({"<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>",
                              "<frozen zipimport>", "<frozen runpy>"})
#: The traceback module's functions that read a traceback's frames and give back only text
#: (formatted or printed lines, line summaries without locals).  A frame read made for one of them
#: is allowed whoever called it: ``traceback.format_exc()`` in a notebook, or TensorFlow formatting
#: an error from C (a ``tf.data`` generator whose thread pool raised), is no attack.  ``walk_tb``,
#: ``walk_stack`` and ``TracebackException(capture_locals=True)`` hand back frames or locals: refused.
TEXT_ONLY_TRACEBACK = frozenset({"format_exc", "format_exception", "format_exception_only", "print_exc",
                                 "print_exception", "print_tb", "format_tb", "extract_tb", "print_last"})
LEARNER, FORWARDER, TRUSTED = 0, 1, 2
_MAX_RECORDED = 20


class Refused(RuntimeError):
    """What the hook raises: the notebook asked for something the grader refuses."""


def _prefix(path: str) -> str:
    return os.path.realpath(path).rstrip(os.sep) + os.sep


def trusted_folders() -> list[str]:
    """The Python installation (stdlib, site-packages) and this package's folder."""
    places = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              sysconfig.get_paths()["stdlib"], os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    places.update(p for p in sys.path if p and "site-packages" in p and os.path.isdir(p))
    return sorted(_prefix(p) for p in places)


class _Judge:
    """Classifies code by its file and finds a request's effective caller."""

    def __init__(self, learner_dirs: Iterable[str]) -> None:
        self.trusted = tuple(trusted_folders())
        self.learner = tuple(_prefix(d) for d in learner_dirs if d)
        self.stdlib = _prefix(sysconfig.get_paths()["stdlib"])
        self.traceback_file = self.stdlib + "traceback.py"
        self.kinds: dict[str, int] = {}
        self.paths: dict[str, str] = {}

    def is_traceback_module(self, filename: str) -> bool:
        path = self.paths.get(filename)
        if path is None:
            path = self.paths[filename] = os.path.realpath(filename)
        return path == self.traceback_file

    def formats_text(self, frame: Any) -> bool:
        """Whether this frame read is the traceback module's, for one of its functions that give
        back text only (:data:`TEXT_ONLY_TRACEBACK`), asked without ``capture_locals``."""
        outermost = None
        while frame is not None and self.is_traceback_module(frame.f_code.co_filename):
            if frame.f_locals.get("capture_locals"):
                return False
            outermost = frame.f_code.co_name
            frame = frame.f_back
        return outermost in TEXT_ONLY_TRACEBACK

    def looks_trusted(self, filename: Any) -> bool:
        """A file name that would make code count as trusted."""
        if isinstance(filename, bytes):
            filename = os.fsdecode(filename)
        if not isinstance(filename, str):
            return False
        if filename.startswith("<frozen "):
            return True
        if filename.startswith("<"):
            return False
        path = _prefix(filename)
        return path.startswith(self.trusted) and not path.startswith(self.learner)

    def kind(self, filename: str) -> int:
        found = self.kinds.get(filename)
        if found is None:
            found = self._classify(filename)
            self.kinds[filename] = found
        return found

    def _classify(self, filename: str) -> int:
        if filename in FORWARDER_FROZEN:
            return FORWARDER
        if not self.looks_trusted(filename):
            return LEARNER
        path = _prefix(filename)
        if path.startswith(self.stdlib) and "site-packages" not in path:
            relative = path[len(self.stdlib):].rstrip(os.sep)
            if relative in FORWARDER_FILES or relative.startswith(FORWARDER_DIRS):
                return FORWARDER
        return TRUSTED

    def caller(self, frame: Any) -> tuple[int, bool]:
        """(kind of the effective caller, whether learner code is anywhere on the stack).
        No effective caller (only forwarders) counts as learner code."""
        effective, anywhere = None, False
        while frame is not None:
            kind = self.kind(frame.f_code.co_filename)
            if effective is None and kind != FORWARDER:
                effective = kind
            anywhere = anywhere or kind == LEARNER
            frame = frame.f_back
        return (LEARNER if effective is None else effective), anywhere


def _learner_made(judge: _Judge, obj: Any) -> bool:
    """Whether the notebook created ``obj`` (by where its code or class lives)."""
    if isinstance(obj, types.FunctionType):
        return judge.kind(obj.__code__.co_filename) == LEARNER
    if isinstance(obj, types.ModuleType):
        filename = getattr(obj, "__file__", None)
        return isinstance(filename, str) and judge.kind(filename) == LEARNER
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(cls, "__module__", None)
    if module == "__main__":
        return True
    filename = getattr(sys.modules.get(module or ""), "__file__", None)
    return isinstance(filename, str) and judge.kind(filename) == LEARNER


def _is_cache_with_source(path: Any) -> bool:
    """``pkg/__pycache__/name.cpython-311.pyc`` beside its ``pkg/name.py``."""
    folder, name = os.path.split(os.fsdecode(path))
    parent, cache = os.path.split(folder)
    return cache == "__pycache__" and os.path.exists(os.path.join(parent, name.split(".")[0] + ".py"))


def _worth_a_look(judge: _Judge, event: str, args: tuple) -> bool:
    """The cheap test first: only these requests need the stack walked."""
    if event == "object.__getattr__":
        return len(args) >= 2 and args[1] in FRAME_ATTRS
    if event in ("object.__setattr__", "object.__delattr__"):
        return bool(args) and not _learner_made(judge, args[0])
    if event in ("compile", "code.__new__"):
        return len(args) >= 2 and judge.looks_trusted(args[1])
    return True


def _what(event: str, args: tuple) -> str:
    """The refused request, in words."""
    if event.startswith("ctypes."):
        return f"use ctypes ({event})"
    if event == "object.__getattr__":
        return f"read {args[1]} (the frames of the code that called them)"
    if event in ("object.__setattr__", "object.__delattr__"):
        target, attr = args[0], (args[1] if len(args) > 1 else "an attribute")
        named = isinstance(target, (type, types.ModuleType, types.FunctionType))
        what = target.__name__ if named else f"a {type(target).__name__} object"
        return f"change {attr} of {what} (not theirs)"
    if event in ("compile", "code.__new__"):
        return f"make code that claims to come from {os.fsdecode(args[1])}"
    return f"call {event}"


def _refusal(judge: _Judge, event: str, args: tuple, frame: Any) -> str | None:
    """Why this request is refused (None: allowed)."""
    if event == "open":
        path = args[0] if args else None
        if isinstance(path, (str, bytes)) and os.fsdecode(path).endswith(".pyc") \
                and judge.kind(os.fsdecode(path)) == LEARNER:
            return f"notebooks may not load compiled files ({os.fsdecode(path)}); ship the .py source"
        return None
    if event in ("compile", "marshal.loads") and frame is not None \
            and frame.f_code.co_filename.startswith("<frozen importlib."):
        return None  # an import: sources and .pyc files of the installation (see "open")
    if not _worth_a_look(judge, event, args):
        return None
    if event == "object.__getattr__" and judge.formats_text(frame):
        return None
    effective, anywhere = judge.caller(frame)
    if effective == LEARNER or (event == "gc.get_objects" and anywhere):
        return f"notebooks may not {_what(event, args)}"
    return None


def install(learner_dirs: Iterable[str] = ()) -> Callable[[], list[str]]:
    """Add the hook to this process (for good).  ``learner_dirs`` are folders
    whose code is the learner's even if they lie inside a trusted folder.
    Returns a function listing what was refused so far (one line each)."""
    import ctypes  # noqa: F401  (its own import opens libraries: done here, not on a learner's behalf)

    judge = _Judge(learner_dirs)
    refused: list[str] = []
    busy = threading.local()

    def hook(event: str, args: tuple) -> None:
        if event not in WATCHED and not event.startswith("ctypes."):
            return
        if getattr(busy, "on", False):  # the hook's own frame walk raises events too
            return
        busy.on = True
        try:
            try:
                caller = sys._getframe(1)
            except ValueError:  # raised from C with no Python code running: nobody's request
                return
            why = _refusal(judge, event, args, caller)
        finally:
            busy.on = False
        if why is not None:
            # A learner module's own cache is no attack: the import just uses the source.
            if not (event == "open" and _is_cache_with_source(args[0])) \
                    and len(refused) < _MAX_RECORDED and why not in refused:
                refused.append(why)
            if event == "open":
                raise PermissionError(f"integrity: {why}")
            raise Refused(f"integrity: {why}")

    sys.addaudithook(hook)
    return lambda: list(refused)
