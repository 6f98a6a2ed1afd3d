"""Warm workers: a zygote that has imported the sandbox worker, ipykernel and (for
TensorFlow assignments) TensorFlow once, and forks a fresh worker per submission.

Without it every submission starts two interpreters -- the worker and the kernel
-- and the kernel's bootstrap imports TensorFlow (several seconds of each
notebook on two cores).  With it (the default):

- the grader asks the zygote of its environment for a worker (:func:`spawn`),
  handing it the worker's three pipes; the zygote forks, the child leads a
  session of its own, keeps only those three descriptors, takes exactly the
  environment and folder a cold worker gets, and runs the same
  ``worker_main``: it reads the job, isolates itself (namespaces, private
  root, cgroups) as before;
- the worker forks its kernel as a :class:`~autograder.sandbox.kernel.KernelSeed`
  right after isolation, so the kernel starts with TensorFlow imported and
  with the same limits, PID namespace and capabilities a cold kernel has.

What is shared is only what the zygote imported before any submission existed:
no submission's data ever reaches the zygote (the job travels on the worker's
own stdin), and each worker and kernel is a copy-on-write fork, gone with its
submission.  A zygote serves one environment (what ``clean_env`` passes, less
the per-submission folders): a grader whose ``TF_ENABLE_ONEDNN_OPTS`` or
visible GPUs change gets a new one.  ``AUTOGRADER_KERNELS=cold`` starts every
worker and kernel as a fresh interpreter (the benchmark's "before").
"""
from __future__ import annotations

import atexit
import sys
from pathlib import Path

from autograder.forking import KERNELS_ENV  # noqa: F401  (the switch's name, for callers of this module)
from autograder.forking import FOLDER_ENV, ForkedProcess, Zygote, ZygotePool, env_key, warm_enabled
from autograder.sandbox import startup

PER_SUBMISSION_ENV = FOLDER_ENV
MAX_ZYGOTES = 3  # each with TensorFlow holds ~0.5 GB; the oldest goes first
WarmWorker = ForkedProcess  # a worker the zygote forked, as the grader uses a Popen


def enabled() -> bool:
    """Warm workers unless ``AUTOGRADER_KERNELS=cold``."""
    return warm_enabled()


_POOL = ZygotePool(MAX_ZYGOTES)
_ZYGOTES = _POOL.zygotes  # oldest first


def _key(with_tf: bool, env: dict[str, str]) -> tuple:
    return with_tf, env_key(env)


def _start(with_tf: bool, env: dict[str, str], cwd: Path, prefix: str) -> Zygote:
    return Zygote(lambda fd: [sys.executable, "-m", "autograder.sandbox.zygote", str(fd),
                              "tf" if with_tf else "plain"], env, cwd, prefix, what="worker zygote")


def spawn(cwd: Path, env: dict[str, str], stderr, *, with_tf: bool, prefix: str) -> WarmWorker:
    """A worker forked by the zygote for this environment (started on first use; its folder is
    named ``prefix...``).  OSError when no zygote can start or fork (the caller starts a cold
    worker instead)."""
    with startup.charged():  # waiting for the zygote's imports is the grader's start-up, not the submission's
        return _POOL.spawn(_key(with_tf, env), lambda: _start(with_tf, env, cwd, prefix), cwd, env, stderr)


def prestart(cwd: Path, env: dict[str, str], *, with_tf: bool, prefix: str) -> None:
    """Start the zygote :func:`spawn` will use, without waiting for its imports (the grader asks
    before it starts the judge, whose zygote then imports side by side with this one)."""
    if enabled():
        _POOL.prestart(_key(with_tf, env), lambda: _start(with_tf, env, cwd, prefix))


@atexit.register
def close_all() -> None:
    """Stop every zygote (at exit, on Ctrl-C)."""
    _POOL.close_all()
