"""Results files (``python -m autograder bench``) and the "Hardware and results" page that reads them."""
from __future__ import annotations

import copy
import json
import os
import shutil

import jupytext
import nbclient
import pytest

from autograder.course.results_files import RESULTS_DIR
from autograder.course.results_files import (ResultsFileError, by_hardware, hardware_label, load_all, markdown_table,
                                      onednn_label, pair_rows, validate)
from tests.conftest import ROOT


PAGE = ROOT / "book" / "hardware.md"


def committed() -> list:
    return load_all(RESULTS_DIR)


def test_every_committed_results_file_has_the_bench_schema():
    files = committed()
    assert files, f"no results file in {RESULTS_DIR}; record one with `python -m autograder bench`"
    for f in files:
        assert f.path.name.endswith(f"-{f.machine['date']}.json"), f"{f.path.name}: name must end with its date"
        if not f.on_gpu:
            assert f.machine["profile"] == "cpu" and f.machine["gpu"] is None


def test_a_cpu_row_from_a_build_machine_exists():
    assert any(not f.on_gpu for f in committed()), "the page's CPU row needs a results file from a CPU machine"


@pytest.fixture
def sample() -> dict:
    """A committed file, to mutate (the newest CPU one)."""
    return copy.deepcopy([f for f in committed() if not f.on_gpu][-1].data)


def gpu_variant(data: dict) -> dict:
    """A synthetic file as `make gpu-check` would write it on a GPU: only for
    exercising the page in a temporary folder, never committed as a result."""
    gpu = copy.deepcopy(data)
    gpu["machine"].update(gpu="Test GPU (synthetic, not a measurement)", compute_capability="9.0",
                          profile="gpu-cc9", cuda_version="12.x", timestamp="2000-01-01T00:00:00+00:00",
                          date="2000-01-01")
    return gpu


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(schema=2), "schema 2"),
    (lambda d: d["machine"].pop("cpu"), "machine lacks cpu"),
    (lambda d: d["machine"].update(profile_injected=True), "injected profile"),
    (lambda d: d["machine"].update(profile="gpu-cc9"), "does not match gpu"),
    (lambda d: d.update(pairs={}), "no benchmark pairs"),
    (lambda d: d.update(budget_s=0), "budget_s"),
    (lambda d: next(e for e in d["pairs"].values() if e.get("ratio")).update(ratio=1e9), "outside its interval"),
    (lambda d: next(e for e in d["pairs"].values() if e.get("ratio")).update(candidate_s=-1.0), "positive"),
    (lambda d: next(iter(d["pairs"].values())).update(verdict="great"), "unknown verdict"),
    (lambda d: next(iter(d["pairs"].values())).pop("label"), "lacks label"),
])
def test_validate_names_what_is_wrong(sample, mutate, message):
    validate(sample, "x.json")
    mutate(sample)
    with pytest.raises(ResultsFileError, match=message) as info:
        validate(sample, "x.json")
    assert str(info.value).startswith("x.json")


def test_a_cpu_file_is_labelled_with_its_onednn_setting(sample):
    sample["machine"].pop("onednn", None)
    assert onednn_label(sample["machine"]) == "oneDNN not recorded"
    assert hardware_label(sample["machine"]).endswith("no GPU, oneDNN not recorded)")
    for enabled, forced, label in ((True, None, "oneDNN on (default)"), (False, False, "oneDNN off (forced)")):
        sample["machine"]["onednn"] = {"enabled": enabled, "forced": forced}
        validate(sample, "x.json")
        assert onednn_label(sample["machine"]) == label
        assert hardware_label(sample["machine"]).endswith(f"no GPU, {label.split(' (')[0]})")
    sample["machine"]["onednn"] = {"enabled": "yes"}
    with pytest.raises(ResultsFileError, match="machine.onednn must be an object"):
        validate(sample, "x.json")


def test_a_half_written_file_stops_the_page_with_its_name(tmp_path, sample):
    (tmp_path / "good-2026-01-01.json").write_text(json.dumps(sample))
    (tmp_path / "bad-2026-01-01.json").write_text(json.dumps(sample)[:200])
    with pytest.raises(ResultsFileError, match="bad-2026-01-01.json: not valid JSON"):
        load_all(tmp_path)


def test_files_are_grouped_by_hardware_gpus_first(tmp_path, sample):
    (tmp_path / "cpu-a.json").write_text(json.dumps(sample))
    later = copy.deepcopy(sample)
    later["machine"]["timestamp"] = "2999-01-01T00:00:00+00:00"
    (tmp_path / "cpu-b.json").write_text(json.dumps(later))
    (tmp_path / "gpu.json").write_text(json.dumps(gpu_variant(sample)))
    groups = by_hardware(load_all(tmp_path))
    labels = list(groups)
    assert labels[0] == "Test GPU (synthetic, not a measurement) (compute capability 9.0)"
    assert labels[1] == hardware_label(sample["machine"]) and "no GPU" in labels[1]
    assert [f.path.name for f in groups[labels[1]]] == ["cpu-a.json", "cpu-b.json"]  # oldest first


def test_rows_show_ratio_interval_and_roofline(sample):
    f = committed()[-1]
    rows = pair_rows(f)
    assert [r["pair"] for r in rows] == list(f.data["pairs"])
    for row, entry in zip(rows, f.data["pairs"].values()):
        if entry.get("ratio"):
            assert row["speedup [interval] (level)"].startswith(f"{entry['ratio']:.2f}×")
            assert row["speedup [interval] (level)"].endswith(f"({entry['confidence']:.1%})")
        else:
            assert row["speedup [interval] (level)"] == "—"
        assert (row["of the roofline"] == "—") == ("roofline" not in entry)
    table = markdown_table(rows)
    assert table.count("\n") == len(rows) + 1 and table.startswith("| pair |")


def execute_page(results_dir) -> tuple[str, int]:
    """Run the page as the book build does (from book/), return all its text outputs."""
    nb = jupytext.read(PAGE)
    old = os.environ.get("AUTOGRADER_RESULTS_DIR")
    os.environ["AUTOGRADER_RESULTS_DIR"] = str(results_dir)
    try:
        nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(ROOT / "book")}}).execute()
    finally:
        if old is None:
            os.environ.pop("AUTOGRADER_RESULTS_DIR")
        else:
            os.environ["AUTOGRADER_RESULTS_DIR"] = old
    texts, images = [], 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.output_type != "error", f"the page failed: {out.ename}: {out.evalue}"
            texts.append(out.get("text", ""))
            texts.append(out.get("data", {}).get("text/markdown", ""))
            images += "image/png" in out.get("data", {})
    return "\n".join(texts), images


# What the built book shows of the committed files: tests/book/test_book.py.


@pytest.mark.slow
def test_a_gpu_file_gets_its_own_group_on_the_page(tmp_path, sample):
    for f in committed():
        shutil.copy(f.path, tmp_path / f.path.name)
    (tmp_path / "test-gpu-2000-01-01.json").write_text(json.dumps(gpu_variant(sample)))
    text, _ = execute_page(tmp_path)
    assert "Measured on a GPU: Test GPU (synthetic, not a measurement)" in text
    assert "No results file from a GPU exists" not in text
    assert text.count("**Test GPU (synthetic") == 1
