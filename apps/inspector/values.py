"""How a captured value looks in the Inspector: tensors as a meta line and a bounded value
grid (heat-coloured against a same-shaped input when asked), other values as plain text.
The grid is built here as HTML in one pass: it is the hot path of the Inspector."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
from django.utils.safestring import SafeString, mark_safe

from apps.graphs.nodes.library._images import PngImage
from apps.graphs.nodes.reprs import short_repr
from apps.runs.engine.events import mean64, parameter_counts, pieces, shape_text, value_kind
from apps.runs.engine.gradients import GradStats

WINDOW = 32          # rows and columns of a 2-D slice shown at once
TEXT_LIMIT = 4000


def fmt(v: Any) -> str:
    """Reference §7: null ·, integers plain, tiny numbers in e-notation, else 4 decimals."""
    if v is None:
        return "·"
    if isinstance(v, bool):
        return "T" if v else "F"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _fmt_float(v)
    return str(v)


@dataclass
class TensorView:
    shape: list[int]
    dtype: str
    stats: str                      # "min X · max Y · mean Z"
    grid: SafeString
    selectors: list[dict[str, Any]] = field(default_factory=list)  # one per leading dim: {dim, size, chosen}
    index: list[int] = field(default_factory=list)
    window: dict[str, Any] = field(default_factory=dict)   # rows/cols shown and hidden, paging offsets
    heat: bool = False
    heat_max: float = 0.0           # the largest change shown: the darkest shade (the legend says it)
    magnitude: bool = False         # shaded by |value| relative to the slice's largest (gradients), not by change

    kind = "tensor"

    @property
    def shape_text(self) -> str:
        return shape_text(self.shape)

    @property
    def heat_max_text(self) -> str:
        return _fmt_float(self.heat_max)


@dataclass(frozen=True)
class Health:
    """A gradient's badge: its verdict in words (never colour alone) and its L2 norm."""

    verdict: str                    # healthy | vanishing | exploding | unknown
    norm: str                       # ‖g‖ as the Inspector writes numbers


def health(stats: GradStats | None) -> Health:
    if stats is None:
        return Health("unknown", "·")
    return Health(stats.verdict, _fmt_float(stats.norm))


@dataclass
class PlainView:
    kind: str                       # model | scalar | string | list | other
    text: str
    meta: str


@dataclass
class ImageView:
    """A drawn picture (a PngImage): the template shows it from its capture's URL."""
    title: str
    width: int
    height: int
    size: int                       # bytes of the PNG

    kind = "image"

    @property
    def meta(self) -> str:
        return f"picture · {self.width} × {self.height} px · PNG, {_kb(self.size)}"


def _kb(n: int) -> str:
    return f"{n / 1024:.1f} KB" if n < 2**20 else f"{n / 2**20:.1f} MB"


def view(value: Any, index: list[int] | None = None, offset: tuple[int, int] = (0, 0),
         compare: torch.Tensor | None = None, magnitude: bool = False):
    if isinstance(value, PngImage):
        return ImageView(value.title or "Picture", value.width, value.height, len(value.data))
    kind = value_kind(value)
    if kind == "tensor":
        return tensor_view(value, index or [], offset, compare, magnitude)
    if kind == "model":
        return PlainView("model", f"{type(value).__name__} · params {parameter_counts(value)[0]:,}", "model")
    if kind == "scalar":
        return PlainView("scalar", fmt(value), type(value).__name__)
    if kind == "string":
        return PlainView("string", value[:TEXT_LIMIT], f"string · {len(value)} characters")
    if kind == "list":
        return PlainView("list", short_repr(value, TEXT_LIMIT), f"{type(value).__name__} · length {len(value)}")
    return PlainView("other", short_repr(value, TEXT_LIMIT), type(value).__name__)


def tensor_view(t: torch.Tensor, index: list[int], offset: tuple[int, int],
                compare: torch.Tensor | None, magnitude: bool = False) -> TensorView:
    """The 2-D slice chosen by ``index`` (one entry per leading dim), a window of it from
    ``offset``, heat-coloured against ``compare`` (same shape) when given, or with ``magnitude``
    by each |value| relative to the largest in the slice (a gradient's grid)."""
    t = t.detach()
    shape = list(t.shape)
    lead = max(0, len(shape) - 2)
    empty = t.numel() == 0
    index = [] if empty else [min(max(0, i), shape[d] - 1) for d, i in enumerate((index + [0] * lead)[:lead])]
    plane = t[tuple(index)] if index else t
    other = None if compare is None else (compare.detach()[tuple(index)] if index else compare.detach())
    rows, cols = (1, 1) if plane.dim() == 0 else (1, plane.shape[0]) if plane.dim() == 1 else tuple(plane.shape)
    r0, c0 = min(max(0, offset[0]), max(0, rows - 1)), min(max(0, offset[1]), max(0, cols - 1))
    r1, c1 = min(rows, r0 + WINDOW), min(cols, c0 + WINDOW)
    cells = None if empty else _window(plane, r0, r1, c0, c1)
    if magnitude and not empty:
        change = heat_change(torch.zeros_like(cells), cells)
        largest = max_magnitude(plane)
    else:
        change = None if other is None or empty else heat_change(_window(other, r0, r1, c0, c1), cells)
        largest = max((c for row in change for c in row), default=0.0) if change else 0.0
    heat = None if change is None else [[heat_alpha(c, largest) for c in row] for row in change]
    return TensorView(
        shape=shape, dtype=str(t.dtype).removeprefix("torch."), stats=_stats(t),
        grid=mark_safe('<p class="hint">(empty tensor)</p>') if empty else _grid_html(cells, heat, changed=not magnitude),
        selectors=[] if empty else [{"dim": d, "size": shape[d], "chosen": index[d],
                                     "options": range(shape[d]) if shape[d] <= 64 else None} for d in range(lead)],
        index=index,
        window={"rows": rows, "cols": cols, "r0": r0, "r1": r1, "c0": c0, "c1": c1,
                "clipped": not empty and (rows > r1 - r0 or cols > c1 - c0),
                "prev_r": max(0, r0 - WINDOW) if r0 else None, "next_r": r1 if r1 < rows else None,
                "prev_c": max(0, c0 - WINDOW) if c0 else None, "next_c": c1 if c1 < cols else None},
        heat=heat is not None, heat_max=largest, magnitude=magnitude)


def max_magnitude(t: torch.Tensor) -> float:
    """The largest finite |value| (0 for none)."""
    if t.numel() == 0 or t.dtype == torch.bool or t.is_complex():
        return 0.0
    size = t.detach().double().abs()
    return float(torch.where(torch.isfinite(size), size, torch.zeros_like(size)).max())


def _window(plane: torch.Tensor, r0: int, r1: int, c0: int, c1: int) -> torch.Tensor:
    """The shown part of a slice, always 2-D."""
    if plane.dim() == 0:
        return plane.reshape(1, 1)
    if plane.dim() == 1:
        return plane[c0:c1].unsqueeze(0)
    return plane[r0:r1, c0:c1]


def _stats(t: torch.Tensor) -> str:
    """min · max · mean over the finite values (the common all-finite case needs no mask)."""
    if t.numel() == 0 or t.dtype == torch.bool or t.is_complex():
        return ""
    lo, hi = torch.aminmax(t)
    lo, hi = lo.item(), hi.item()
    if not t.is_floating_point():
        return f"min {fmt(lo)} · max {fmt(hi)}"
    if math.isfinite(lo) and math.isfinite(hi):
        mean = mean64(t)
    elif (finite := _finite_stats(t)) is None:
        return "no finite values"
    else:
        lo, hi, mean = finite
    return f"min {fmt(lo)} · max {fmt(hi)} · mean {fmt(mean)}"


def _finite_stats(t: torch.Tensor) -> tuple[float, float, float] | None:
    """min, max and mean of the finite values, a piece at a time: a huge tensor holding a NaN
    is never copied whole."""
    lo, hi, total, count = math.inf, -math.inf, 0.0, 0
    for piece in pieces(t):
        finite = piece[torch.isfinite(piece)]
        if finite.numel():
            a, b = torch.aminmax(finite)
            lo, hi = min(lo, a.item()), max(hi, b.item())
            total += finite.sum(dtype=torch.float64).item()
            count += finite.numel()
    return (lo, hi, total / count) if count else None


HEAT_LIGHTEST, HEAT_DARKEST = 0.08, 0.75   # shade of the smallest and of the largest change shown
HEAT_RGB = "6, 182, 212"  # the shade's colour; editor/palette.css holds one rule per hundredth


def heat_alpha(change: float, largest: float) -> float:
    """A cell's shade, scaled to the largest change shown: a change of 3.7 and one of 0.005 look
    different even where every relative change is large (Softmax). 0 for no change."""
    if change <= 0 or largest <= 0:
        return 0.0
    return HEAT_LIGHTEST + (HEAT_DARKEST - HEAT_LIGHTEST) * change / largest


def heat_change(before: torch.Tensor, after: torch.Tensor) -> list[list[float]]:
    """|a − b| per cell; 0 where either is not a finite number (or the values are not real numbers)."""
    if before.dtype == torch.bool or after.dtype == torch.bool or before.is_complex() or after.is_complex():
        return torch.zeros(after.shape).tolist()
    change = (before.double() - after.double()).abs()
    return torch.where(torch.isfinite(change), change, torch.zeros_like(change)).tolist()


def _cell_texts(cells: torch.Tensor) -> list[list[str]]:
    """Every cell of a window formatted as ``fmt`` would, with one mask for the whole window
    choosing the common 4-decimal form inline; the rest (tiny, huge, not finite) call ``_fmt_float``."""
    if cells.dtype == torch.bool:
        return [["T" if v else "F" for v in row] for row in cells.tolist()]
    if not cells.is_floating_point():
        return [[str(v) for v in row] for row in cells.tolist()]
    d = cells.double() + 0.0  # + 0.0 makes -0.0 plain 0.0, which prints as "0" as fmt's int(v) does
    size = d.abs()
    plain = (((size >= 1e-3) & (size < 1e15)) | (d == 0)).tolist()
    return [[f"{v:.4f}".rstrip("0").rstrip(".") if p else _fmt_float(v) for v, p in zip(row, prow)]
            for row, prow in zip(d.tolist(), plain)]


def _fmt_float(v: float) -> str:
    """The float case of ``fmt``, on its own (the grid's cells take a faster path first)."""
    if v != v:
        return "NaN"
    if v in (math.inf, -math.inf):
        return "Infinity" if v > 0 else "-Infinity"
    if v.is_integer() and -1e15 < v < 1e15:
        return str(int(v))
    if -1e-3 < v < 1e-3:
        return f"{v:.2e}"
    return f"{v:.4f}".rstrip("0").rstrip(".") if -1e15 < v < 1e15 else f"{v:.4e}"


def _grid_html(cells: torch.Tensor, heat: list[list[float]] | None, changed: bool = True) -> SafeString:
    """The window as a table, in one pass; shaded cells carry ``data-heat`` (in hundredths,
    which the generated editor/palette.css colours), and changed cells a title. A single row
    (a 1-D tensor, a [1, N] row) stays one row, never wrapped like a matrix: smaller cells,
    the column's scroller, and its last cell marked as the row's end."""
    texts = _cell_texts(cells)
    if heat is None:
        rows = ["<td>" + "</td><td>".join(row) + "</td>" for row in texts]
    else:
        mark = ' class="changed" title="changed"' if changed else ""
        rows = ["".join(f'<td{mark} data-heat="{round(alpha * 100)}">{text}</td>'
                        if alpha > 0 else f"<td>{text}</td>" for text, alpha in zip(row, alphas))
                for row, alphas in zip(texts, heat)]
    if len(rows) == 1 and cells.shape[1] > 1:
        return mark_safe(f'<table class="grid one-row"><tbody><tr>{rows[0]}</tr></tbody></table>')
    return mark_safe('<table class="grid"><tbody><tr>' + "</tr><tr>".join(rows) + "</tr></tbody></table>")
