"""How long each chapter and exercise of the course takes: reading time and run time, measured.

The start page (``book/intro.md``) prints a reading order with these figures, so no time on
it is typed in:

- **reading time** is a page's words (prose and code, front matter left out) at
  :data:`WORDS_PER_MINUTE`;
- **run time** is what executing the page took when the book was built, read from the
  Jupyter Book execution cache (``_build/.jupyter_cache``, the ``execution_seconds`` that
  myst-nb and ``book/execute_ahead.py`` store with each executed page).  A page the cache
  does not hold (the book not built from this checkout yet) has none; nothing is estimated.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

WORDS_PER_MINUTE = 200  # a common figure for reading technical prose; code is counted the same way
COURSE_PART = "The course"  # the caption of _toc.yml's part that holds the chapters, in order
FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)


@dataclass(frozen=True)
class Page:
    """A chapter or an exercise: where it is, its title, its words and what running it took."""

    path: Path
    title: str
    words: int
    run_seconds: float | None  # None: no execution recorded for this page

    @property
    def reading_minutes(self) -> float:
        return self.words / WORDS_PER_MINUTE


def course_chapters(root: Path) -> list[Path]:
    """The chapters of ``_toc.yml``'s course part, in reading order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    for part in toc.get("parts") or []:
        if part.get("caption") == COURSE_PART:
            return [root / f"{entry['file']}.md" for entry in part["chapters"]]
    raise ValueError(f"_toc.yml has no part with caption {COURSE_PART!r}")


def exercise_of(root: Path, chapter: Path) -> Path:
    """The released exercise that goes with ``chapter``: ``exercises/NN_name/NN_name.ipynb``."""
    return root / "exercises" / chapter.stem / f"{chapter.stem}.ipynb"


def count_words(text: str) -> int:
    return len(text.split())


def chapter_words(path: Path) -> tuple[str, int]:
    """A MyST page's H1 and its word count (front matter left out)."""
    text = FRONT_MATTER.sub("", path.read_text(encoding="utf-8"), count=1)
    title = re.search(r"^# (.+)$", text, re.M)
    return (title.group(1).strip() if title else path.stem), count_words(text)


def exercise_words(path: Path) -> tuple[str, int]:
    """A notebook's first H1 and the words of all its cells."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    text = "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells)
    title = re.search(r"^# (.+)$", text, re.M)
    return (title.group(1).strip() if title else path.stem), count_words(text)


def run_times(cache_dir: Path) -> dict[str, float]:
    """Seconds each page's execution took, by absolute path, from the execution cache
    (the latest record of each page); empty when there is no cache."""
    if not (cache_dir / "global.db").exists():
        return {}
    from jupyter_cache import get_cache

    latest: dict[str, tuple[object, float]] = {}
    for record in get_cache(str(cache_dir)).list_cache_records():
        seconds = (record.data or {}).get("execution_seconds")
        if seconds is None:
            continue
        if record.uri not in latest or record.created > latest[record.uri][0]:
            latest[record.uri] = (record.created, float(seconds))
    return {uri: seconds for uri, (_, seconds) in latest.items()}


def reading_order(root: Path, cache_dir: Path | None = None) -> list[tuple[Page, Page | None]]:
    """(chapter, its exercise or None) for every chapter of the course, in reading order."""
    times = run_times(cache_dir if cache_dir is not None else root / "_build" / ".jupyter_cache")
    order = []
    for path in course_chapters(root):
        title, words = chapter_words(path)
        chapter = Page(path, title, words, times.get(str(path.resolve())))
        exercise = exercise_of(root, path)
        if exercise.exists():
            ex_title, ex_words = exercise_words(exercise)
            order.append((chapter, Page(exercise, ex_title, ex_words, None)))
        else:
            order.append((chapter, None))
    return order


def minutes(value: float) -> str:
    """``12 min`` or ``1 h 05 min``, rounded to the minute (at least 1)."""
    total = max(1, round(value))
    return f"{total} min" if total < 60 else f"{total // 60} h {total % 60:02d} min"


def duration(seconds: float) -> str:
    """``45 s`` under a minute and a half, else as :func:`minutes`."""
    return f"{seconds:.0f} s" if seconds < 90 else minutes(seconds / 60)


def table_rows(order: list[tuple[Page, Page | None]]) -> list[dict[str, str]]:
    """One row per chapter for the start page's table."""
    rows = []
    for number, (chapter, exercise) in enumerate(order, 1):
        rows.append({
            "#": str(number),
            "chapter": chapter.title,
            "reading": minutes(chapter.reading_minutes),
            "its cells ran": (duration(chapter.run_seconds) if chapter.run_seconds is not None
                              else "not in this build's cache"),
            "exercise (reading)": (f"`{exercise.path.parent.name}` ({minutes(exercise.reading_minutes)})"
                                   if exercise else "none"),
        })
    return rows


def summary(order: list[tuple[Page, Page | None]]) -> str:
    """The totals, in one sentence."""
    reading = sum(c.reading_minutes for c, _ in order)
    exercises = sum(e.reading_minutes for _, e in order if e)
    ran = [c.run_seconds for c, _ in order if c.run_seconds is not None]
    text = (f"At {WORDS_PER_MINUTE} words a minute the {len(order)} chapters take {minutes(reading)} to read "
            f"and their exercises {minutes(exercises)}, before any time spent solving them.")
    if len(ran) == len(order):
        text += f" Executing the chapters took {minutes(sum(ran) / 60)} in the build that executed this page."
    elif ran:
        text += f" The execution cache holds run times for {len(ran)} of the {len(order)} chapters."
    else:
        text += " This build's execution cache holds no run times, so only reading time is shown."
    return text
