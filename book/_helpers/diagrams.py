"""Diagrams kept as text and drawn by a cell at build time (matplotlib patches and arrows).

A chapter states its diagram as data (boxes with positions and words, arrows
with labels) in the cell that draws it, so the picture lives in the repository
as text, is reviewed like prose, and needs no network, JavaScript or graphviz.
"""
from __future__ import annotations

from dataclasses import dataclass

from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Polygon

STYLES = {
    "start": {"facecolor": "#eee", "edgecolor": "#444"},
    "decision": {"facecolor": "#fff4d6", "edgecolor": "#a80"},
    "outcome": {"facecolor": "#dcecf8", "edgecolor": "#247"},
    "error": {"facecolor": "#f8dcdc", "edgecolor": "#a22"},
}


@dataclass(frozen=True)
class Box:
    """A box centred at (x, y) in axes units (0..1), ``width`` by ``height``."""
    x: float
    y: float
    text: str
    kind: str = "outcome"
    width: float = 0.2
    height: float = 0.1


def _edge_point(box: Box, toward: tuple[float, float]) -> tuple[float, float]:
    """Where the line from the box's centre toward ``toward`` leaves the box."""
    dx, dy = toward[0] - box.x, toward[1] - box.y
    if dx == 0 and dy == 0:
        return box.x, box.y
    half_w, half_h = box.width / 2, box.height / 2
    if box.kind == "decision":   # a diamond: |dx| / half_w + |dy| / half_h = 1 on its edge
        scale = 1 / (abs(dx) / half_w + abs(dy) / half_h)
    else:
        scale = min(half_w / abs(dx) if dx else float("inf"), half_h / abs(dy) if dy else float("inf"))
    return box.x + dx * scale, box.y + dy * scale


def draw_flowchart(ax, boxes: dict[str, Box], arrows: list[tuple[str, str, str]], *, fontsize: float = 8) -> None:
    """Draw ``boxes`` (decisions as diamonds) joined by ``arrows`` (from, to, label) on ``ax``."""
    unknown = sorted({name for start, end, _ in arrows for name in (start, end)} - set(boxes))
    if unknown:
        raise ValueError(f"arrows name boxes that are not defined: {', '.join(unknown)}; add them to boxes")
    for box in boxes.values():
        if box.kind not in STYLES:
            raise ValueError(f"box kind {box.kind!r} is not one of {', '.join(STYLES)}")
        style = STYLES[box.kind]
        if box.kind == "decision":
            w, h = box.width / 2, box.height / 2
            patch = Polygon([(box.x - w, box.y), (box.x, box.y + h), (box.x + w, box.y), (box.x, box.y - h)],
                            closed=True, linewidth=1.2, **style)
        else:
            patch = FancyBboxPatch((box.x - box.width / 2, box.y - box.height / 2), box.width, box.height,
                                   boxstyle="round,pad=0.005,rounding_size=0.015", linewidth=1.2, **style)
        ax.add_patch(patch)
        ax.text(box.x, box.y, box.text, ha="center", va="center", fontsize=fontsize, wrap=False)
    for start, end, label in arrows:
        a, b = boxes[start], boxes[end]
        tail, head = _edge_point(a, (b.x, b.y)), _edge_point(b, (a.x, a.y))
        ax.add_patch(FancyArrowPatch(tail, head, arrowstyle="-|>", mutation_scale=12, linewidth=1.1, color="#333"))
        if label:
            ax.text((tail[0] + head[0]) / 2, (tail[1] + head[1]) / 2, label, fontsize=fontsize - 0.5,
                    ha="center", va="center", color="#333",
                    bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none"})
    margin = 0.01
    ax.set_xlim(min(0.0, min(b.x - b.width / 2 for b in boxes.values()) - margin),
                max(1.0, max(b.x + b.width / 2 for b in boxes.values()) + margin))
    ax.set_ylim(min(0.0, min(b.y - b.height / 2 for b in boxes.values()) - margin),
                max(1.0, max(b.y + b.height / 2 for b in boxes.values()) + margin))
    ax.axis("off")
