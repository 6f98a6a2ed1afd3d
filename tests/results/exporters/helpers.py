"""A small graded folder, as `grade --out` leaves it, for the exporter tests."""
from __future__ import annotations

from pathlib import Path

from autograder.results.results import Results, TestResult

# (student, assignment) → per-part (name, score, max); ps2 has 5 points, ps1 has 5.
CLASS = {
    ("alice", "ps1"): [("a", 2, 2), ("b", 3, 3)],
    ("alice", "ps2"): [("c", 1.5, 4), ("d", 0, 1)],
    ("bob", "ps1"): [("a", 0, 2), ("b", 3, 3)],
    ("carol", "ps2"): [("c", 4, 4), ("d", 1, 1)],
}


def results(parts, output: str = "") -> Results:
    return Results(tests=[TestResult(n, float(s), float(m)) for n, s, m in parts], output=output)


def graded_folder(out: Path) -> Path:
    """``out/<student>/<assignment>/results.json`` for :data:`CLASS`, plus the files a
    graded folder also holds (feedback, grades.csv) that exporters must not trip on."""
    for (student, assignment), parts in CLASS.items():
        folder = out / student / assignment
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(results(parts).to_json())
        (folder / "feedback.html").write_text("<p>feedback</p>")
    (out / "grades.csv").write_text("old\n")
    return out


def write_roster(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
