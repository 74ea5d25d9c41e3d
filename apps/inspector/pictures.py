"""A small picture of a node's output for its card, so a class sees the data flow without
clicking each node: a tiny heat map of the slice the Inspector shows first, or a sparkline
for a 1-D tensor (a [1, N] row too), or the picture itself when the output is one (a
PngImage a plot node drew: the template shows it as an <img> from its capture's URL).
Numbers for an SVG the template draws; no Django.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from apps.graphs.nodes.library._images import PngImage

from .values import fmt, shape_text

WIDTH, HEIGHT = 168, 34          # px on the card
HEAT_MAX_ROWS, HEAT_MAX_COLS = 8, 28
LINE_MAX_POINTS = 64
IMAGE_MAX_HEIGHT = 90            # px on the card: a picture keeps its proportions within WIDTH × this
CARD_ROOM, IMAGE_PAD = 40, 8     # room a picture takes under the card's ports: a strip, or a drawn picture + pad


@dataclass
class Picture:
    kind: str                                   # "heat" | "line" | "image"
    title: str                                  # what it shows, in words (hover, screen readers)
    cells: list[tuple[str, str, str, str, str]] = field(default_factory=list)  # x, y, w, h, fill: as SVG writes them
    key: str = ""                               # which capture it draws: the template caches its markup by it
    points: str = ""                            # the sparkline's polyline
    width: int = WIDTH
    height: int = HEIGHT
    node: str = ""                              # an image: the capture it shows (run, node, port)
    port: str = ""
    run: str = ""

    @property
    def card_h(self) -> int:
        """The room it takes under the card's ports (a viewer's picture says its own)."""
        return self.height + IMAGE_PAD if self.kind == "image" else CARD_ROOM


def picture(value) -> Picture | None:
    """The picture of a captured value, or None when it is neither a picture nor a non-empty
    real tensor."""
    if isinstance(value, PngImage):
        return image_picture(value)
    if not isinstance(value, torch.Tensor) or value.numel() == 0 or value.dtype == torch.bool or value.is_complex():
        return None
    t = value.detach()
    plane = t[(0,) * (t.dim() - 2)] if t.dim() > 2 else t       # the Inspector's first slice
    plane = plane.double()
    if plane.dim() < 2 or plane.shape[0] == 1:
        return _line(plane.reshape(-1), t)
    return _heat(plane, t)


def image_picture(image: PngImage) -> Picture:
    """A drawn picture, scaled to the card's width (or IMAGE_MAX_HEIGHT), proportions kept."""
    w, h = max(1, image.width), max(1, image.height)
    scale = min(WIDTH / w, IMAGE_MAX_HEIGHT / h)
    return Picture("image", image.title or "Picture", width=max(1, round(w * scale)), height=max(1, round(h * scale)))


def _title(kind: str, t: torch.Tensor, shown: torch.Tensor) -> str:
    finite = shown[torch.isfinite(shown)]
    span = f"from {fmt(finite.min().item())} to {fmt(finite.max().item())}" if finite.numel() else "no finite values"
    where = "" if t.dim() <= 2 else f", slice [{', '.join(['0'] * (t.dim() - 2))}, :, :]"
    return f"{kind} of the output {shape_text(t.shape)}{where}: {span}"


def _line(row: torch.Tensor, t: torch.Tensor) -> Picture:
    title = _title("Line", t, row)
    if row.numel() > LINE_MAX_POINTS:  # mean of equal pieces: the shape of the curve, not every point
        row = F.adaptive_avg_pool1d(row.reshape(1, 1, -1), LINE_MAX_POINTS).reshape(-1)
    finite = torch.nan_to_num(row, nan=0.0, posinf=0.0, neginf=0.0)
    lo, hi = finite.min().item(), finite.max().item()
    span = (hi - lo) or 1.0
    n = finite.numel()
    step = (WIDTH - 4) / max(n - 1, 1)
    points = " ".join(f"{2 + i * step:.1f},{HEIGHT - 3 - (v - lo) / span * (HEIGHT - 6):.1f}"
                      for i, v in enumerate(finite.tolist()))
    if n == 1:
        points += f" {WIDTH - 2:.1f},{HEIGHT / 2:.1f}"
    return Picture("line", title, points=points)


def _heat(plane: torch.Tensor, t: torch.Tensor) -> Picture:
    rows, cols = min(plane.shape[0], HEAT_MAX_ROWS), min(plane.shape[1], HEAT_MAX_COLS)
    finite = torch.nan_to_num(plane, nan=0.0, posinf=0.0, neginf=0.0)
    if (rows, cols) != tuple(plane.shape):
        finite = F.adaptive_avg_pool2d(finite.reshape(1, 1, *plane.shape), (rows, cols)).reshape(rows, cols)
    largest = finite.abs().max().item() or 1.0
    w, h = WIDTH / cols, HEIGHT / rows
    # written out here, once per capture: the template then only places strings (no number formatting)
    cells = [(f"{c * w:.1f}", f"{r * h:.1f}", f"{w:.1f}", f"{h:.1f}", _shade(v / largest))
             for r, row in enumerate(finite.tolist()) for c, v in enumerate(row)]
    return Picture("heat", _title("Heat map", t, plane), cells=cells)


def _shade(x: float) -> str:
    """-1..1 as colour: cyan for positive, orange for negative, white at zero."""
    strength = min(1.0, abs(x))
    return f"rgba(6,182,212,{strength:.2f})" if x >= 0 else f"rgba(234,88,12,{strength:.2f})"
