"""The book's prose agrees with what its cells compute, and with TensorFlow.

Numbers that are easy to check are checked here: the op count of chapter 4's
chain (from its source, and from the executed notebook when a build has left
one), the confidence level each chapter names (against the measurement
library's), and the chapters' names for the texts the course started from.
The default-placement rules chapter 1 states are run in a fresh process on two
logical CPU devices, as the chapter runs them.
"""
from __future__ import annotations

import ast
import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder.checks.timing import look_plan, measure_speedup
from tests.conftest import ROOT

BOOK = ROOT / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.md"))
CACHE = ROOT / "_build" / ".jupyter_cache"
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def prose(text: str) -> str:
    """A chapter without its code cells and code blocks."""
    return FENCE.sub("", text)


def code_cells(text: str) -> list[str]:
    """Each code cell's source, without its option lines (":tags: [...]") or its
    YAML metadata block ("---" ... "---", e.g. a figure's alt text)."""
    return [re.sub(r"\A(?:(?::[\w-]+:[^\n]*\n)+|---\n(?s:.*?)^---\n)\n?", "", body, flags=re.M)
            for body in CODE_CELL.findall(text)]


def executed_outputs(chapter: Path) -> list[str] | None:
    """Text each code cell printed when the build last executed this chapter's
    current code, or None when no build has.  The build's execution cache
    (``_build/.jupyter_cache``) keeps every executed version with its outputs;
    ``_build/jupyter_execute`` is rewritten without outputs on a cache hit."""
    wanted = [s.strip() for s in code_cells(chapter.read_text(encoding="utf-8"))]
    for notebook in sorted(CACHE.glob("executed/*/base.ipynb"), key=lambda p: p.stat().st_mtime, reverse=True):
        cells = [c for c in json.loads(notebook.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
        if ["".join(c["source"]).strip() for c in cells] != wanted:
            continue
        texts = []
        for cell in cells:
            parts = []
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream":
                    parts.append("".join(output["text"]))
                elif "text/plain" in output.get("data", {}):
                    parts.append("".join(output["data"]["text/plain"]))
            texts.append("".join(parts))
        return texts
    return None


# --- the sources are named, never called "the seed" ------------------------------------

# Random seeds are fine: set_random_seed(...), seed=[1, 2], def build_model(seed=1).
RANDOM_SEED_USES = re.compile(r"set_random_seed\(\w*\)|random\.set_seed\(\w*\)|\bseed=[\w\[\], ]+|\(seed\)")
SOURCE_AS_SEED = re.compile(r"\bseed(?:'s|_\w+)?\b", re.I)


@pytest.mark.parametrize("page", CHAPTERS + [BOOK / "intro.md"], ids=lambda p: p.stem)
def test_no_page_calls_its_sources_the_seed(page):
    text = RANDOM_SEED_USES.sub("", page.read_text(encoding="utf-8"))
    found = [text[max(0, m.start() - 40):m.end() + 40].replace("\n", " ") for m in SOURCE_AS_SEED.finditer(text)]
    assert not found, f"{page.name} says 'seed' where it means one of its sources: {found}"


def test_the_introduction_names_both_sources():
    intro = (BOOK / "intro.md").read_text(encoding="utf-8")
    assert "2019 question about placement logs" in intro
    assert "widely shared performance tutorial" in intro


# --- confidence levels ------------------------------------------------------------------

def test_no_chapter_types_an_interval_level():
    """An interval's level is the look plan's (``timing_stats.look_plan``), and the chapters print
    it from each result's ``interval_confidence``: a typed level ("95% interval", the level before
    sequential looks) goes stale when the plan changes, so no chapter may type one, in prose or in
    a cell; and the chapters that label an interval do take it from the result."""
    typed = [f"{chapter.name}: {m.group(0)!r}" for chapter in CHAPTERS
             for m in re.finditer(r"\b\d+(?:\.\d+)?\s*% (?:confidence )?intervals?\b", chapter.read_text(encoding="utf-8"))]
    assert not typed, f"interval levels typed by hand: {typed}"
    labelled = [c.name for c in CHAPTERS if "interval_confidence" in c.read_text(encoding="utf-8")]
    assert len(labelled) >= 3, f"only {labelled} label an interval with its level"
    assert look_plan(inspect.signature(measure_speedup).parameters["confidence"].default).interval_confidence > 0.95


# --- chapter 4's chain ------------------------------------------------------------------

XLA = BOOK / "04_xla.md"


def chain_op_count(source: str) -> int:
    """TensorFlow ops one call of `chain` runs: each arithmetic operator and each
    tf.* call in the loop body, times the loop's range."""
    function = next(node for node in ast.walk(ast.parse(source))
                    if isinstance(node, ast.FunctionDef) and node.name == "chain")
    loop = next(node for node in function.body if isinstance(node, ast.For))
    rounds = loop.iter.args[0].value
    per_round = sum(isinstance(node, ast.BinOp)
                    or (isinstance(node, ast.Call) and ast.unparse(node.func).startswith("tf."))
                    for statement in loop.body for node in ast.walk(statement))
    return rounds * per_round


def test_chain_op_count_helper_counts_operators_and_tf_calls():
    source = "def chain(x):\n    for _ in range(3):\n        x = tf.maximum(x * 2.0 + 1.0, 0.0)\n    return x\n"
    assert chain_op_count(source) == 9


def chapter_4_chain_ops() -> int:
    cell = next(c for c in code_cells(XLA.read_text(encoding="utf-8")) if c.startswith("def chain("))
    return chain_op_count(cell)


def test_chapter_4_prose_states_no_op_or_launch_count_other_than_the_chains():
    ops = chapter_4_chain_ops()
    text = prose(XLA.read_text(encoding="utf-8"))
    for number in re.findall(r"(\d+)[- ](?:cheap |elementwise |fused )*ops?\b", text):
        assert int(number) == ops, f"chapter 4 says {number} ops; chain() runs {ops}"
    for number in re.findall(r"(\d+) kernel launches", text):
        assert int(number) in (ops, ops - 1), f"chapter 4 says {number} kernel launches; chain() runs {ops} ops"


def test_chapter_4_prints_the_op_count_its_chain_runs(book_build_done):
    outputs = executed_outputs(XLA)
    if outputs is None:
        pytest.skip("no executed chapter 4 from a build of the current source (run `make book`)")
    printed = [int(n) for text in outputs for n in re.findall(r"chain\(\) runs (\d+) elementwise ops", text)]
    assert printed == [chapter_4_chain_ops()], f"chapter 4 printed {printed}"


def test_chapter_4_prints_the_confidence_level_its_prose_names(book_build_done):
    outputs = executed_outputs(XLA)
    if outputs is None:
        pytest.skip("no executed chapter 4 from a build of the current source (run `make book`)")
    printed = {int(n) for text in outputs for n in re.findall(r"(\d+)% interval", text)}
    named = {int(n) for n in re.findall(r"(\d+)\s*% confidence", prose(XLA.read_text(encoding="utf-8")))}
    assert printed and named <= printed, f"prose names {named}%, the cells printed {printed}%"


# --- chapter 1's default-placement rules --------------------------------------------------

RULES_PROGRAM = textwrap.dedent("""
    import json, os
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
    import tensorflow as tf
    from tensorflow.python.framework import kernels
    from autograder.checks.placement import capture, start_logging

    start_logging()
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

    def devices(log, op_type):
        return sorted({r.short_device for r in log.records if r.op_type == op_type})

    def gpu_host_memory(op_type, dtype):
        for kernel in kernels.get_registered_kernels_for_op(op_type).kernel:
            types = {c.name: [tf.as_dtype(t).name for t in c.allowed_values.list.type] for c in kernel.constraint}
            if kernel.device_type == "GPU" and types.get("T") == [dtype]:
                return sorted(kernel.host_memory_arg)

    facts = {"gpus": len(tf.config.list_physical_devices("GPU"))}
    with tf.device("/CPU:1"):
        v = capture(lambda: tf.Variable([1.0, 2.0])).result
        x = tf.ones(2)
    facts["unpinned"] = devices(capture(lambda: x * 3.0), "Mul")
    with tf.device("/CPU:0"):
        facts["eager_read"] = devices(capture(v.read_value), "ReadVariableOp")

    @tf.function
    def read_under_scope():
        with tf.device("/CPU:0"):
            return v.read_value() * 2.0

    facts["graph_read"] = devices(capture(read_under_scope), "ReadVariableOp")
    facts["host_memory"] = {d: gpu_host_memory("Mul", d) for d in ("float32", "int32")}
    facts["gpu_kernels"] = {op: any(k.device_type in ("GPU", "DEFAULT")
                                    for k in kernels.get_registered_kernels_for_op(op).kernel)
                            for op in ("MatMul", "ReadVariableOp", "StringFormat")}
    with tf.device("/GPU:0"):
        facts["soft"] = devices(capture(lambda: tf.ones(2) * 2.0), "Mul")
    tf.config.set_soft_device_placement(False)
    try:
        with tf.device("/GPU:0"):
            tf.ones(2) * 2.0
        facts["hard"] = "ran"
    except (tf.errors.InvalidArgumentError, RuntimeError) as error:
        facts["hard"] = type(error).__name__
    print("FACTS", json.dumps(facts))
""")


@pytest.fixture(scope="module")
def placement_facts():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", RULES_PROGRAM], capture_output=True, text=True, env=env,
                          timeout=300, cwd=ROOT)
    line = next((l for l in done.stdout.splitlines() if l.startswith("FACTS ")), None)
    assert line, f"the placement program failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return json.loads(line[len("FACTS "):])


@pytest.mark.slow  # runs TensorFlow's placer in a fresh process
def test_rule_1_an_unpinned_op_goes_to_the_highest_priority_device(placement_facts):
    # Two logical CPUs rank equally, so the first by name; a GPU outranks both.
    expected = ["GPU:0"] if placement_facts["gpus"] else ["CPU:0"]
    assert placement_facts["unpinned"] == expected


@pytest.mark.slow  # runs TensorFlow's placer in a fresh process
def test_rule_1_this_build_has_gpu_kernels_for_math_and_none_for_string_ops(placement_facts):
    assert placement_facts["gpu_kernels"] == {"MatMul": True, "ReadVariableOp": True, "StringFormat": False}


@pytest.mark.slow  # runs TensorFlow's placer in a fresh process
def test_rule_2_resource_ops_follow_the_resource_not_the_scope(placement_facts):
    assert placement_facts["eager_read"] == ["CPU:1"]
    assert placement_facts["graph_read"] == ["CPU:1"]


@pytest.mark.slow  # runs TensorFlow's placer in a fresh process
def test_rule_3_gpu_kernels_keep_int32_in_host_memory(placement_facts):
    assert placement_facts["host_memory"] == {"float32": [], "int32": ["x", "y", "z"]}


@pytest.mark.slow  # runs TensorFlow's placer in a fresh process
def test_rule_4_soft_placement_falls_back_and_hard_placement_fails(placement_facts):
    if placement_facts["gpus"]:
        pytest.skip("/GPU:0 exists here, so a request for it needs no fallback")
    assert placement_facts["soft"] == ["CPU:0"]
    assert placement_facts["hard"] in ("InvalidArgumentError", "RuntimeError")
