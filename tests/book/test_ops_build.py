"""The chapter 7 custom op: its one-command build (messages, cache), the CPU
kernel against TensorFlow's own GELU, the registered gradient against finite
differences, and the CUDA sources compiling with nvcc (the GPU library, the
GPU-only library's NotFoundError on a CPU, the standalone harness, and the
exercise's CUDA kernel).  Builds are cached in book/ops/build/, so only the
first run pays the compile time."""
from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from autograder.checks import opbuild
from tests.conftest import ROOT

# The compiles share the book's cache (book/ops/build.py): after the session's book build (the
# first test of tests/book/ that needs the book builds it) they are mostly cache hits; alone, they
# compile (about 100 s).

OPS = ROOT / "book" / "ops"
BUILD_SCRIPT = OPS / "build.py"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc not found: the CUDA sources can only be compiled where the CUDA toolkit is")


def _load_build():
    spec = importlib.util.spec_from_file_location("course_ops_build", BUILD_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["course_ops_build"] = module
    spec.loader.exec_module(module)
    return module


build = _load_build()


@pytest.fixture(scope="module")
def bias_gelu():
    sys.path.insert(0, str(OPS))
    try:
        import bias_gelu as module
    finally:
        sys.path.remove(str(OPS))
    return module


# --- the build command -----------------------------------------------------------


def test_missing_compiler_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-xyz")
    with pytest.raises(build.BuildError, match=r"C\+\+ compiler 'no-such-compiler-xyz' not found: install g\+\+"):
        build.find_toolchain()


def test_cli_reports_a_missing_compiler_in_one_line():
    env = {**os.environ, "CXX": "no-such-compiler-xyz"}
    proc = subprocess.run([sys.executable, str(BUILD_SCRIPT)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert proc.stderr.startswith("error: C++ compiler 'no-such-compiler-xyz' not found")


def test_compile_error_names_the_file_and_the_error(tmp_path):
    with pytest.raises(build.BuildError) as info:
        build.build_from_text("broken", "#error deliberately broken\n", out_dir=tmp_path)
    message = str(info.value)
    assert "broken.cc" in message and "deliberately broken" in message
    assert str(tmp_path) not in message, "generated paths are shortened to the file name"
    assert "\n" not in message


@pytest.mark.slow  # compiles the op twice
def test_cached_build_is_reused_and_a_source_change_rebuilds(tmp_path, monkeypatch):
    first = build.build_bias_gelu()
    stamp = first.stat().st_mtime_ns
    compiled = []

    def compiler(cmd, what):  # counts the compiler's runs instead of paying them (the others test it)
        compiled.append(what)
        Path(cmd[cmd.index("-o") + 1]).write_bytes(b"")

    monkeypatch.setattr(opbuild, "run_compiler", compiler)
    again = build.build_bias_gelu()
    assert again == first and again.stat().st_mtime_ns == stamp
    assert compiled == [], "a cache hit must not recompile"
    # The key covers the sources: a copy with one changed header is a new build.
    for name in [*build.BIAS_GELU_SOURCES, *build.BIAS_GELU_HEADERS]:
        shutil.copy(OPS / name, tmp_path / name)
    with open(tmp_path / "bias_gelu_math.h", "a") as f:
        f.write("\n// changed\n")
    key_of = lambda folder: build.build_library(  # noqa: E731
        "probe", [folder / "bias_gelu_op.cc"], headers=[folder / h for h in build.BIAS_GELU_HEADERS],
        out_dir=tmp_path / "out")
    changed = key_of(tmp_path)
    assert len(compiled) == 1, compiled
    assert changed.exists() and changed.name != first.name.replace("bias_gelu", "probe")


def test_build_all_compiles_two_at_a_time_and_the_shared_cuda_object_once(tmp_path, monkeypatch):
    """`make ops`: every build of the chapter, two compilers running at once (never three), the
    CUDA object the GPU and GPU-only libraries share compiled once; a failed build raises."""
    import threading
    import time

    running, most, calls, lock = [0], [0], [], threading.Lock()

    def slow_compiler(cmd, what):  # a compile that takes a while, so builds started together overlap
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            calls.append(what)
        time.sleep(0.2)
        with lock:
            running[0] -= 1
        if what in failing:
            raise build.BuildError(f"{what} failed")
        Path(cmd[cmd.index("-o") + 1]).write_bytes(b"built")

    def slow_probe(source, relaxed_constexpr, toolchain):
        slow_compiler(["nvcc", "-o", str(tmp_path / "probe.ptx")], f"probe {relaxed_constexpr}")
        return {"returncode": 0 if relaxed_constexpr else 1, "errors": 0 if relaxed_constexpr else 4,
                "first_error": "", "seconds": 0.2}

    failing: set[str] = set()
    monkeypatch.setattr(opbuild, "run_compiler", slow_compiler)
    monkeypatch.setattr(build, "_run", slow_compiler)
    monkeypatch.setattr(build, "_probe_once", slow_probe)
    monkeypatch.setattr(opbuild, "tf_flags", lambda: (["-I/tf/include", "--std=c++17"], ["-ltensorflow_framework"]))
    monkeypatch.setattr(build, "BUILD_DIR", tmp_path / "build")
    monkeypatch.setattr(build, "FALLBACK_DIR", tmp_path / "fallback")
    toolchain = opbuild.Toolchain(cxx="g++", nvcc="/cuda/bin/nvcc", tf_version="2.21.0")

    built = build.build_all(harness=True, jobs=2, toolchain=toolchain)
    assert list(built) == ["gpu library", "probe without", "probe with", "cpu library", "gpu-only library",
                           "cuda harness"]
    assert all(built[name].read_bytes() == b"built" for name in built if not name.startswith("probe"))
    assert built["probe without"]["errors"] == 4 and built["probe with"]["returncode"] == 0
    assert most[0] == 2, f"at most {most[0]} compiler(s) ran at once"
    assert calls.count("nvcc bias_gelu_kernel.cu.cc") == 1, calls
    assert set(calls[:2]) == {"nvcc bias_gelu_kernel.cu.cc", "probe False"}, f"longest first: {calls}"

    # Nothing cached is compiled again; a build that fails raises its one-line error.
    calls.clear()
    again = build.build_all(harness=True, toolchain=toolchain)
    assert calls == [] and again["probe with"]["cached"] and again["cpu library"] == built["cpu library"]
    monkeypatch.setattr(build, "BUILD_DIR", tmp_path / "build2")
    failing.add(f"nvcc {build.HARNESS_SOURCE}")
    with pytest.raises(build.BuildError, match=f"^nvcc {build.HARNESS_SOURCE} failed$"):
        build.build_all(harness=True, gpu=False, toolchain=toolchain)


def test_build_dir_falls_back_to_temp_when_not_writable(tmp_path, monkeypatch):
    """The sandboxed grader lets notebooks write only in their folder and TMPDIR."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(build, "BUILD_DIR", blocker / "build")
    monkeypatch.setattr(build, "FALLBACK_DIR", tmp_path / "fallback")
    assert build.writable_build_dir() == tmp_path / "fallback"
    monkeypatch.setattr(build, "FALLBACK_DIR", blocker / "fallback")
    with pytest.raises(build.BuildError, match="COURSE_OPS_BUILD_DIR"):
        build.writable_build_dir()


# --- the CPU kernel and the gradient ---------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 3), (0, 5), (2, 3, 7), (1,), (33, 129)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cpu_kernel_matches_tensorflow_gelu(bias_gelu, shape, dtype):
    import tensorflow as tf

    rng = np.random.default_rng(sum(shape))
    x = tf.constant(rng.normal(size=shape) * 3, dtype=dtype)
    bias = tf.constant(rng.normal(size=shape[-1:]), dtype=dtype)
    got = bias_gelu.bias_gelu(x, bias)
    assert got.shape == x.shape and got.dtype == x.dtype
    # math.erf in double precision: exact for this purpose.  (tf.nn.gelu in
    # float64 is off by ~5e-9 on TF 2.21, too coarse for a float64 check.)
    z = x.numpy().astype(np.float64) + bias.numpy()
    exact = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(z) if z.size else z
    tol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got.numpy(), exact, rtol=tol, atol=tol)
    np.testing.assert_allclose(got.numpy(), tf.nn.gelu(x + bias, approximate=False).numpy(), rtol=1e-6, atol=1e-6)


def test_bias_shape_is_checked_eagerly_and_in_graphs(bias_gelu):
    import tensorflow as tf

    with pytest.raises(tf.errors.InvalidArgumentError, match="bias has 4 entries but x's last dimension is 5"):
        bias_gelu.bias_gelu(tf.ones((2, 5)), tf.ones(4))
    traced = tf.function(bias_gelu.bias_gelu)
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        traced.get_concrete_function(tf.TensorSpec([None, 5]), tf.TensorSpec([4]))


def test_registered_gradient_matches_finite_differences(bias_gelu):
    import tensorflow as tf

    from autograder.checks.gradients import assert_gradient_numeric

    x = tf.random.normal((3, 4), dtype=tf.float64) * 2
    bias = tf.random.normal((4,), dtype=tf.float64)
    assert_gradient_numeric(bias_gelu.bias_gelu, [x, bias], name="BiasGelu gradient")


def test_registered_gradient_matches_tensorflow_composition(bias_gelu):
    import tensorflow as tf

    from autograder.checks.gradients import assert_gradients_match

    assert_gradients_match(
        bias_gelu.bias_gelu, lambda x, b: tf.nn.gelu(x + b, approximate=False),
        lambda: (tf.random.normal((2, 3, 6)) * 2, tf.random.normal((6,))), name="BiasGelu gradient")


def test_wrong_gradient_would_be_caught(bias_gelu):
    """The numeric check is not vacuous: a gradient missing the density term fails it."""
    import tensorflow as tf

    from autograder.checks.gradients import assert_gradient_numeric

    @tf.custom_gradient
    def wrong(x, b):
        z = x + b
        def grad(dy):
            d = dy * 0.5 * (1 + tf.math.erf(z / np.sqrt(2)))
            return d, tf.reduce_sum(d, axis=0)
        return bias_gelu.bias_gelu(x, b), grad

    with pytest.raises(AssertionError, match="disagrees with finite differences"):
        assert_gradient_numeric(wrong, [tf.random.normal((3, 4), dtype=tf.float64), tf.zeros(4, tf.float64)])


# --- CUDA: compiled with nvcc (run only on a GPU) -----------------------------------------


@pytest.mark.slow
@needs_nvcc
def test_gpu_library_builds_and_its_cpu_kernel_still_runs():
    path = build.build_bias_gelu(gpu=True)
    code = ("import sys, tensorflow as tf; m = tf.load_op_library(sys.argv[1]); "
            "print(float(m.bias_gelu(tf.ones((2, 3)), tf.ones(3))[0, 0]))")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert abs(float(proc.stdout.strip().splitlines()[-1]) - 1.9544997) < 1e-6


@pytest.mark.slow
@needs_nvcc
def test_gpu_only_library_raises_not_found_without_a_gpu():
    path = build.build_bias_gelu(gpu_only=True)
    code = ("import json, sys, tensorflow as tf; m = tf.load_op_library(sys.argv[1])\n"
            "gpus = tf.config.list_physical_devices('GPU')\n"
            "try:\n    m.bias_gelu(tf.ones((2, 3)), tf.ones(3)); print(json.dumps({'ok': True, 'gpus': len(gpus)}))\n"
            "except tf.errors.NotFoundError as e:\n    print(json.dumps({'ok': False, 'gpus': len(gpus), 'error': str(e)}))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["gpus"]:
        assert result["ok"], result
    else:
        assert not result["ok"] and "device='GPU'" in result["error"], result


@pytest.mark.slow
@needs_nvcc
def test_cuda_harness_compiles_and_knows_when_it_cannot_run():
    harness = build.build_harness()
    proc = subprocess.run([str(harness)], capture_output=True, text=True, timeout=300)
    if proc.returncode == 2 and "no CUDA device" in proc.stderr:
        return  # compiled; this machine has no GPU to run it on
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all cases passed" in proc.stdout


@pytest.mark.slow
@needs_nvcc
def test_nvcc_needs_relaxed_constexpr_for_tensorflow_gpu_headers():
    source = OPS / "guide_style_kernel.cu.cc"
    without = build.nvcc_probe(source, relaxed_constexpr=False)
    assert without["returncode"] != 0 and without["errors"] > 0, without
    assert "expt-relaxed-constexpr" in without["first_error"]
    assert build.nvcc_probe(source, relaxed_constexpr=True)["returncode"] == 0


@pytest.mark.gpu
@needs_nvcc
def test_cuda_harness_passes_on_a_gpu():
    proc = subprocess.run([str(build.build_harness())], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "all cases passed" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
@needs_nvcc
def test_exercise_cuda_kernel_compiles_with_the_reference_kernel_body():
    import nbformat

    nb = nbformat.read(ROOT / "solutions" / "07_custom_ops" / "07_custom_ops.ipynb", as_version=4)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in nb.cells}
    namespace: dict = {"opbuild": build}
    exec(cells["skeleton"], namespace)
    body = cells["answer-kernel"].split('SWISH_COMPUTE = r"""')[1].split('"""')[0]
    source = namespace["SKELETON"].replace("{compute}", body).replace("{op_name}", "SwishXcudacheck")
    path = build.build_from_text("swish", source, cuda_source=namespace["SWISH_CUDA"])
    assert path.exists()


@pytest.mark.gpu
@needs_nvcc
def test_gpu_kernel_matches_the_cpu_kernel_on_the_gpu(bias_gelu):
    import tensorflow as tf

    assert "gpu" in bias_gelu.LIBRARY_PATH.name, "with a GPU and nvcc, bias_gelu.py loads the GPU build"
    x = tf.random.normal((4099, 129)) * 3
    bias = tf.random.normal((129,))
    tf.config.set_soft_device_placement(False)
    try:
        with tf.device("/CPU:0"):
            on_cpu = bias_gelu.bias_gelu(x, bias)
        with tf.device("/GPU:0"):
            with tf.GradientTape() as tape:
                tape.watch(x)
                on_gpu = bias_gelu.bias_gelu(x, bias)
            grad = tape.gradient(on_gpu, x)
    finally:
        tf.config.set_soft_device_placement(True)
    assert on_gpu.device.endswith("GPU:0") and grad.device.endswith("GPU:0")
    np.testing.assert_allclose(on_gpu.numpy(), on_cpu.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@needs_nvcc
def test_exercise_grades_the_gpu_kernel_on_a_gpu():
    from autograder.frontends.check import check_notebook as run_notebook

    results = run_notebook(ROOT / "solutions" / "07_custom_ops" / "07_custom_ops.ipynb")
    by_name = results.by_name()
    assert all(t.score == t.max_score for t in results.tests), {t.name: t.output for t in results.tests}
    assert "/GPU:0 with your op's CUDA build" in by_name["test-device"].output
