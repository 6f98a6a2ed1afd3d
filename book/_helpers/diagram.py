"""Box-and-arrow diagrams drawn by a page's cell with matplotlib (no graphviz, no network).

A page keeps its diagram as text (a dict of boxes and a list of arrows) and
calls :func:`draw` on it, so the picture is built with the page and changes
with it in a diff.  Coordinates are in a unit grid of the page's choosing.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

COLOURS = {"python": "#dbe9f6", "graph": "#e2f0d9", "cpp": "#fde9d9", "cuda": "#f2e0f7",
           "file": "#fff2cc", "device": "#e7e6e6", "note": "#ffffff"}


def draw(boxes: Mapping[str, tuple], arrows: Sequence[tuple] = (), *, size=(7, 3.5),
         title: str | None = None, width: float = 2.2, height: float = 0.7, fontsize: float = 8.5):
    """Draw ``boxes`` ({key: (x, y, text[, kind])}, centres) joined by ``arrows``
    ((from_key, to_key[, label])) and return the figure.

    ``kind`` picks a fill from :data:`COLOURS` (default "note"); an unknown key in
    an arrow or an unknown kind raises ``ValueError`` naming it."""
    fig, ax = plt.subplots(figsize=size)
    for key, spec in boxes.items():
        if len(spec) not in (3, 4):
            raise ValueError(f"box {key!r} must be (x, y, text) or (x, y, text, kind), not {spec!r}")
        x, y, text = spec[:3]
        kind = spec[3] if len(spec) == 4 else "note"
        if kind not in COLOURS:
            raise ValueError(f"box {key!r} has kind {kind!r}; use one of {sorted(COLOURS)}")
        ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                    boxstyle="round,pad=0.05", facecolor=COLOURS[kind],
                                    edgecolor="#444", linewidth=1))
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)
    for arrow in arrows:
        start, end = arrow[0], arrow[1]
        for key in (start, end):
            if key not in boxes:
                raise ValueError(f"arrow {arrow!r} names box {key!r}, which is not in the diagram")
        (x0, y0), (x1, y1) = boxes[start][:2], boxes[end][:2]
        dx, dy = x1 - x0, y1 - y0
        length = (dx * dx + dy * dy) ** 0.5 or 1.0
        # leave each box where the line from its centre crosses its edge, plus a small gap
        edge = min((width / 2) / abs(dx) if dx else float("inf"), (height / 2) / abs(dy) if dy else float("inf"))
        t = min(edge + 0.06 / length, 0.45)
        p0 = (x0 + dx * t, y0 + dy * t)
        p1 = (x1 - dx * t, y1 - dy * t)
        ax.add_patch(FancyArrowPatch(p0, p1, arrowstyle="-|>", mutation_scale=12, color="#333", linewidth=1.1))
        if len(arrow) > 2 and arrow[2]:
            ax.text((p0[0] + p1[0]) / 2, (p0[1] + p1[1]) / 2 + 0.12, arrow[2], ha="center", va="bottom",
                    fontsize=fontsize - 1, color="#333", style="italic")
    xs = [spec[0] for spec in boxes.values()]
    ys = [spec[1] for spec in boxes.values()]
    ax.set_xlim(min(xs) - width / 2 - 0.2, max(xs) + width / 2 + 0.2)
    ax.set_ylim(min(ys) - height / 2 - 0.3, max(ys) + height / 2 + 0.3)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
