"""The book's benchmark pairs: a baseline and a faster way to do the same work.

Each ``Benchmark`` names the thresholds row it is judged by and builds its pair
on demand (``setup()`` -> ``(baseline, candidate, make_inputs)``), so importing
this module costs nothing and every run gets fresh ``tf.function`` objects.
``python -m autograder bench`` times every pair with ``measure_speedup`` and the
book's plots read the JSON it writes.  ``slow_setup``, where given, builds a
plausible mistake that produces the right answer without the speedup; the
reliability script (``benchmarks/reliability.py``) checks that it never passes.

To add a pair for a chapter: write a ``_setup_<name>`` function that imports
TensorFlow inside (in ``benchmark_pairs_compute`` or ``benchmark_pairs_data``),
import it here and add a ``Benchmark`` to ``BENCHMARKS`` (and a row to
``autograder.checks.thresholds.THRESHOLDS`` for its ``check``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

# The pairs live in two modules (computation, tf.data pipelines); their setups
# stay importable from here.
from autograder.course.benchmark_pairs_compute import (  # noqa: F401
    Pair, _setup_device_matmul, _setup_graph_vs_eager, _setup_keras_inference_graph_vs_eager,
    _setup_mixed_precision_step, _setup_xla_fused_chain, _setup_xla_train_step, _slow_graph_vs_eager,
    _slow_keras_inference_graph_vs_eager, _slow_xla_fused_chain, _slow_xla_train_step, _work_device_matmul,
    _work_graph_vs_eager, _work_mixed_precision_step, _work_xla_fused_chain,
)
from autograder.course.benchmark_pairs_data import (  # noqa: F401
    _setup_tfdata_batch_before_map, _setup_tfdata_latency_pipeline, _setup_tfdata_parallel_prefetch,
    _setup_tfdata_vectorized_map, _slow_tfdata_batch_before_map, _slow_tfdata_latency_pipeline,
    _slow_tfdata_parallel_prefetch, _slow_tfdata_vectorized_map, _work_tfdata_batch_before_map,
)
from autograder.course.roofline import Work


@dataclass(frozen=True)
class Benchmark:
    """One baseline/candidate pair of the book."""

    name: str
    chapter: str
    description: str
    check: str  # row of autograder.checks.thresholds.THRESHOLDS
    setup: Callable[[], Pair]
    label: str = "candidate"
    baseline_label: str = "baseline"
    rtol: float = 1e-5
    atol: float = 1e-6
    slow_setup: Callable[[], Pair] | None = None
    # What one candidate call must compute and move (for the same profile as
    # setup()), so the roofline can say how far it is from the machine's limit.
    work: Callable[[], Work] | None = None


BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in (
        Benchmark(
            name="graph_vs_eager",
            chapter="06_autograph",
            description="40 small ops on an 8x16 tensor: eager Python vs one tf.function",
            check="graph_vs_eager",
            setup=_setup_graph_vs_eager,
            work=_work_graph_vs_eager,
            label="tf.function",
            baseline_label="eager",
            rtol=1e-4,
            atol=1e-5,
            slow_setup=_slow_graph_vs_eager,
        ),
        Benchmark(
            name="xla_fused_chain",
            chapter="04_xla",
            description="24 elementwise ops on 512x1024 floats: tf.function vs jit_compile=True",
            check="xla_fused_chain",
            setup=_setup_xla_fused_chain,
            work=_work_xla_fused_chain,
            label="XLA",
            baseline_label="plain",
            rtol=1e-4,
            atol=1e-5,
            slow_setup=_slow_xla_fused_chain,
        ),
        Benchmark(
            name="tfdata_parallel_prefetch",
            chapter="05_tf_data",
            description="24 elements with 10 ms simulated I/O each, 20 ms step per batch of 8: "
            "sequential map vs parallel map (8-thread pool) + prefetch",
            check="tfdata_parallel_prefetch",
            setup=_setup_tfdata_parallel_prefetch,
            label="parallel map + prefetch",
            baseline_label="naive",
            slow_setup=_slow_tfdata_parallel_prefetch,
        ),
        Benchmark(
            name="tfdata_batch_before_map",
            chapter="05_tf_data",
            description="4096 rows of 16 floats through a vectorizable map: map then batch vs batch then map",
            check="tfdata_batch_before_map",
            setup=_setup_tfdata_batch_before_map,
            work=_work_tfdata_batch_before_map,
            label="batch then map",
            baseline_label="map then batch",
            slow_setup=_slow_tfdata_batch_before_map,
        ),
        Benchmark(
            name="device_matmul",
            chapter="02_gpu_placement",
            description="ten dependent (n x n) @ (n x 64) matmuls with tanh (n=512 on CPU, 1024 on GPU): "
            "/CPU:0 vs the exercise device (/GPU:0, or /CPU:1 without a GPU)",
            check="device_matmul",
            setup=_setup_device_matmul,
            work=_work_device_matmul,
            label="exercise device",
            baseline_label="/CPU:0",
            rtol=1e-3,
            atol=1e-4,
        ),
        Benchmark(
            name="mixed_precision_step",
            chapter="03_mixed_precision",
            description="forward + backward of a 3-layer MLP (256 rows, width 1024 on CPU; 2048 rows, width 4096 on GPU): "
            "float32 vs mixed policy",
            check="mixed_precision_step",
            setup=_setup_mixed_precision_step,
            work=_work_mixed_precision_step,
            label="mixed precision step",
            baseline_label="float32",
            rtol=3e-2,
            atol=3e-2,
        ),
        Benchmark(
            name="xla_train_step",
            chapter="04_xla",
            description="exercise 4's MLP training step (1024x8 inputs, width 256, forward + backward + update): "
            "tf.function vs jit_compile=True",
            check="xla_train_step",
            setup=_setup_xla_train_step,
            label="XLA step",
            baseline_label="plain step",
            rtol=1e-4,
            atol=1e-5,
            slow_setup=_slow_xla_train_step,
        ),
        Benchmark(
            name="tfdata_latency_pipeline",
            chapter="05_tf_data",
            description="exercise 5's source: 64 records, 8 ms simulated latency each, batches of 16: "
            "sequential pipeline (automatic optimisations off) vs 16 reads in flight + prefetch",
            check="tfdata_latency_pipeline",
            setup=_setup_tfdata_latency_pipeline,
            label="16 reads in flight",
            baseline_label="naive",
            slow_setup=_slow_tfdata_latency_pipeline,
        ),
        Benchmark(
            name="tfdata_vectorized_map",
            chapter="05_tf_data",
            description="exercise 5's featurize on 8192 rows of 16 floats: per-element map then batch vs "
            "batch then a vectorised map",
            check="tfdata_vectorized_map",
            setup=_setup_tfdata_vectorized_map,
            label="vectorised map",
            baseline_label="per-element map",
            rtol=1e-4,
            atol=1e-5,
            slow_setup=_slow_tfdata_vectorized_map,
        ),
        Benchmark(
            name="keras_inference_graph_vs_eager",
            chapter="08_deployment",
            description="exercise 8's 6-16-3 Keras classifier on one row: eager model(x) vs "
            "tf.function(model) with a (None, 6) float32 input_signature",
            check="keras_inference_graph_vs_eager",
            setup=_setup_keras_inference_graph_vs_eager,
            label="signature-traced graph",
            baseline_label="eager model(x)",
            rtol=1e-4,
            atol=1e-5,
            slow_setup=_slow_keras_inference_graph_vs_eager,
        ),
    )
}
