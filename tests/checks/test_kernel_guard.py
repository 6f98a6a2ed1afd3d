"""autograder.checks.kernel_guard: the audit hook refuses learner introspection, and only that.

A hook cannot be removed, so each test runs a small "learner" program in a
fresh interpreter: a file in ``tmp_path`` is learner code, as a notebook cell is.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder.checks import kernel_guard

PRELUDE = """\
import json, sys
from autograder.checks import kernel_guard
refused = kernel_guard.install()
results = {}
def attempt(name, fn):
    try:
        fn()
        results[name] = "allowed"
    except kernel_guard.Refused as exc:
        results[name] = str(exc)
"""
EPILOGUE = "\nprint(json.dumps({'results': results, 'recorded': refused()}))\n"


def run_learner(tmp_path: Path, body: str, *, files: dict[str, str] | None = None) -> dict:
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    script = tmp_path / "learner.py"
    script.write_text(PRELUDE + textwrap.dedent(body) + EPILOGUE)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


ATTACKS = {
    "frame": "attempt('x', lambda: sys._getframe(1))",
    "inspect": "import inspect\nattempt('x', lambda: inspect.currentframe().f_back)",
    "current_frames": "attempt('x', sys._current_frames)",
    "gc_objects": "import gc\nattempt('x', gc.get_objects)",
    "gc_referrers": "import gc\nattempt('x', lambda: gc.get_referrers(json))",
    "gc_referents": "import gc\nattempt('x', lambda: gc.get_referents(json))",
    "tb_frame": ("def caught():\n    try:\n        1 / 0\n    except ZeroDivisionError as exc:\n"
                 "        return exc.__traceback__.tb_frame.f_back\nattempt('x', caught)"),
    "gi_frame": "def gen():\n    yield\nattempt('x', lambda: gen().gi_frame)",
    "settrace": "attempt('x', lambda: sys.settrace(lambda *a: None))",
    "setprofile": "attempt('x', lambda: sys.setprofile(lambda *a: None))",
    "ctypes_from_address": "import ctypes\nattempt('x', lambda: ctypes.c_char.from_address(id(json)))",
    "ctypes_string_at": "import ctypes\nattempt('x', lambda: ctypes.string_at(id(json), 8))",
    "ctypes_dlopen": "import ctypes\nattempt('x', lambda: ctypes.CDLL(None))",
    "defaults": "def patch():\n    json.dumps.__defaults__ = ()\nattempt('x', patch)",
    "code_swap": "def patch():\n    json.loads.__code__ = (lambda s, **k: 1).__code__\nattempt('x', patch)",
    "class_bases": ("def patch():\n    json.JSONEncoder.__qualname__ = 'Mine'\nattempt('x', patch)"),
    "module_class": ("import types\nclass Lying(types.ModuleType):\n    pass\n"
                     "def patch():\n    json.__class__ = Lying\nattempt('x', patch)"),
    "instance_class": ("import fractions\nclass Liar(fractions.Fraction):\n    def __eq__(self, other):\n"
                       "        return True\nf = fractions.Fraction(1, 3)\n"
                       "def patch():\n    f.__class__ = Liar\nattempt('x', patch)"),
    "compile_as_trusted": "attempt('x', lambda: compile('1', json.__file__, 'exec'))",
    "code_replace": "attempt('x', lambda: (lambda: 1).__code__.replace(co_filename=json.__file__))",
    "frozen_name": "attempt('x', lambda: compile('1', '<frozen os>', 'exec'))",
    "thread_target": ("import gc, threading\nt = threading.Thread(target=gc.get_objects)\n"
                      "t.start(); t.join()\nresults['x'] = 'see recorded'"),
    "walk_tb": ("import traceback\ndef caught():\n    try:\n        1 / 0\n    except ZeroDivisionError as exc:\n"
                "        return next(traceback.walk_tb(exc.__traceback__))[0].f_back\nattempt('x', caught)"),
    "capture_locals": ("import traceback\ndef caught():\n    try:\n        1 / 0\n    except ZeroDivisionError as e:\n"
                       "        return traceback.TracebackException(type(e), e, e.__traceback__, capture_locals=True)\n"
                       "attempt('x', caught)"),
    "mock_patch": ("from unittest import mock\n"
                   "def patch():\n    with mock.patch.object(json.dumps, '__defaults__', ()):\n        pass\n"
                   "attempt('x', patch)"),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_each_attack_is_refused_and_recorded(tmp_path, name):
    found = run_learner(tmp_path, ATTACKS[name])
    assert found["recorded"], found
    assert all(line.startswith("notebooks may not") for line in found["recorded"])
    if found["results"]["x"] != "see recorded":
        assert found["results"]["x"].startswith("integrity: notebooks may not"), found


def test_adding_an_audit_hook_is_refused(tmp_path):
    """Python swallows a refusal of sys.addaudithook: the hook is just not added, and recorded."""
    found = run_learner(tmp_path, """
        seen = []
        sys.addaudithook(lambda event, args: seen.append(event))
        compile('1', 'x', 'exec')
        results['x'] = len(seen)
    """)
    assert found["results"]["x"] == 0
    assert found["recorded"] == ["notebooks may not call sys.addaudithook"]


def test_what_libraries_and_learners_legitimately_do_still_works(tmp_path):
    found = run_learner(tmp_path, """
        import collections, dataclasses, enum, logging, typing, traceback, inspect
        import numpy as np
        attempt('namedtuple', lambda: collections.namedtuple('P', 'a b'))
        class NT(typing.NamedTuple):
            a: int
        attempt('enum', lambda: enum.Enum('Color', 'RED GREEN'))
        attempt('logging', lambda: logging.getLogger('t').warning('fine'))
        @dataclasses.dataclass(frozen=True)
        class D:
            x: int
        attempt('dataclass', lambda: D(1))
        class Mine:
            pass
        def own():
            Mine.__doc__ = 'mine'
            Mine().__class__ = Mine
            def f(a=1):
                return a
            f.__defaults__ = (2,)
            return f.__code__
        attempt('own objects', own)
        attempt('numpy ctypes', lambda: np.zeros(3).ctypes.data)
        attempt('signature', lambda: inspect.signature(json.dumps))
        import helper
        attempt('own module', helper.run)
        attempt('class attribute', lambda: setattr(json.JSONEncoder, 'extra', 1))
        import io, threading
        def printed_error():
            try:
                1 / 0
            except ZeroDivisionError as exc:
                text = traceback.format_exc() + "".join(traceback.format_exception(exc))
                traceback.print_exc(file=io.StringIO())
                # formatted by a thread of a pool (as from C: no learner frame under it)
                worker = threading.Thread(target=traceback.print_exception, args=(exc,), kwargs={"file": io.StringIO()})
                worker.start(), worker.join()
                return text
        attempt('format and print an error', printed_error)
    """, files={"helper.py": "def run():\n    return 1\n"})
    assert set(found["results"].values()) == {"allowed"}, found
    assert found["recorded"] == []


def test_shipped_pyc_is_not_loaded(tmp_path):
    """A compiled file could carry any file name; a .pyc in the learner's folder is refused."""
    import py_compile

    (tmp_path / "src.py").write_text("VALUE = 1\n")
    py_compile.compile(str(tmp_path / "src.py"), cfile=str(tmp_path / "shipped.pyc"))
    found = run_learner(tmp_path, """
        try:
            import shipped
            results['x'] = 'allowed'
        except (ImportError, OSError) as exc:
            results['x'] = str(exc)
    """)
    assert "integrity: notebooks may not load compiled files" in found["results"]["x"], found


def test_python_raises_no_event_for_class_and_module_writes_or_signals(tmp_path):
    """What the docstring says stays reachable: no audit event to refuse it by."""
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent("""
        import json, signal, sys
        seen = []
        sys.addaudithook(lambda event, args: seen.append(event) if event.startswith(('object.', 'signal')) else None)
        class C:
            pass
        C.method = lambda self: 1
        del C.method
        json.extra = 1
        signal.signal(signal.SIGUSR1, lambda *a: None)
        signal.setitimer(signal.ITIMER_REAL, 0)
        print(json.dumps(seen))
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout) == []


def test_trusted_folders_hold_the_installation_and_this_package():
    folders = kernel_guard.trusted_folders()
    assert any(Path(kernel_guard.__file__).resolve().is_relative_to(f) for f in folders)
    assert any(Path(json.__file__).resolve().is_relative_to(f) for f in folders)


@pytest.mark.slow  # imports TensorFlow in a fresh interpreter
def test_a_thread_pool_inside_a_tf_data_generator_is_not_refused(tmp_path):
    """Reads in a ``concurrent.futures`` pool inside ``Dataset.from_generator``: TensorFlow formats the
    generator's end from C with the traceback module, which reads the frames; honest code, not refused."""
    found = run_learner(tmp_path, """
        import concurrent.futures, os
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        import numpy as np
        import tensorflow as tf
        def gen():
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                yield from pool.map(np.float32, range(8))
        ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.float32)).batch(4)
        results['batches'] = [b.numpy().tolist() for b in ds]
    """)
    assert found["results"]["batches"] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
    assert found["recorded"] == [], found
