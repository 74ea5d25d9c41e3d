"""The full-size viewers' pictures (reference §14): the attention heatmap and the embedding
scatter, as numbers an SVG template places. The cards' inline pictures, the viewers' pages
without JavaScript and their tests share these builders; the JavaScript viewer
(static/js/viewer-frame.js, drawn with plotly) draws what heatmap_data and scatter_data give it. No Django.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from apps.runs.engine.events import value_kind

# -- which nodes have a viewer ---------------------------------------------------------------


@dataclass(frozen=True)
class ViewerSpec:
    kind: str            # "heatmap" | "scatter"
    port: str            # the output it draws
    rows: str = ""       # the LIST output that names the rows (scatter: the points)
    cols: str = ""       # the LIST output that names the columns ("" : the rows' names)
    mask: bool = False   # a mask: values coerced to 0/1, absolute colours

    @property
    def button(self) -> str:
        return "Open detailed view" if self.kind == "scatter" else "View full"


VIEWERS: dict[str, ViewerSpec] = {
    "AttentionHeatmap": ViewerSpec("heatmap", "weights", "labels"),
    "AttentionMask": ViewerSpec("heatmap", "mask", mask=True),
    "deep:Edu-SelfAttention": ViewerSpec("heatmap", "weights", "labels"),
    "deep:Edu-MultiHeadAttention": ViewerSpec("heatmap", "weights", "labels"),
    "deep:Edu-CrossAttention": ViewerSpec("heatmap", "weights", "q_labels", "k_labels"),
    "EmbeddingScatter": ViewerSpec("scatter", "points_2d", "labels"),
}


def spec_of(node_type: str) -> ViewerSpec | None:
    return VIEWERS.get(node_type)


# -- texts (reference §14, verbatim) ---------------------------------------------------------

TOO_LARGE = "Tensor too large for inline preview"
NO_DATA = "no data"
LOADING = "Loading full tensor…"
GONE = "Cannot fetch: run is no longer available."
ROW_NORMALISED = " · row-normalised colours"
CLOSE_HINT = "click outside or press Esc to close"
SCATTER_EMPTY = "Run the graph to see the projection"
SCATTER_TOO_MANY = "Too many points to preview on the node"
SCATTER_GONE = "Cannot load: this run is no longer available."
NO_POINTS = "No points to display"
NO_MATCH = "No labels match"
SCATTER_HINT = "click a label to centre · drag to pan · scroll to zoom"


def expected_tensor(value: Any) -> str:
    return f"Expected tensor, got {value_kind(value)}"


def couldnt_load(error: str) -> str:
    return f"Couldn't load: {error}"


# -- colours ---------------------------------------------------------------------------------

COLORMAPS: dict[str, tuple[str, ...]] = {
    "viridis": ("#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"),
    "blues": ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"),
    "RdBu": ("#67001f", "#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7", "#d1e5f0", "#92c5de", "#4393c3",
             "#2166ac", "#053061"),
}
DEFAULT_COLORMAP = "viridis"


def colormap_name(name: Any) -> str:
    """A colormap the viewers know (case-insensitive), else viridis: a hand-edited URL gets the default."""
    wanted = str(name or "").lower()
    return next((k for k in COLORMAPS if k.lower() == wanted), DEFAULT_COLORMAP)


def colour(name: str, x: float) -> str:
    """0..1 on a colormap, as #rrggbb (linear between its stops)."""
    stops = COLORMAPS[colormap_name(name)]
    x = 0.0 if not math.isfinite(x) else min(1.0, max(0.0, x))
    pos = x * (len(stops) - 1)
    i = min(int(pos), len(stops) - 2)
    t = pos - i
    a, b = stops[i], stops[i + 1]
    mixed = [round(int(a[k:k + 2], 16) * (1 - t) + int(b[k:k + 2], 16) * t) for k in (1, 3, 5)]
    return "#" + "".join(f"{c:02x}" for c in mixed)


def colorscale(name: str) -> list[list[Any]]:
    """The colormap as plotly's colorscale: [[0, "#..."], ..., [1, "#..."]]."""
    stops = COLORMAPS[colormap_name(name)]
    return [[round(i / (len(stops) - 1), 4), c] for i, c in enumerate(stops)]


# -- the heatmap's numbers -------------------------------------------------------------------


class ViewerError(ValueError):
    """What a viewer says instead of a picture (one of the statuses above)."""


def panels_of(value: Any, mask: bool = False) -> tuple[list[torch.Tensor], bool]:
    """The matrices to draw, as float64 [rows, cols]: a 2-D tensor is one panel; 3-D is one
    panel per head; 4-D takes batch 0. The bool is whether the panels are heads (h0, h1 ...)."""
    if not isinstance(value, torch.Tensor):
        raise ViewerError(expected_tensor(value))
    t = value.detach().cpu()
    if t.is_complex():
        raise ViewerError("Expected a real tensor, got a complex one")
    if t.dim() == 4:
        t = t[0]
    if t.dim() == 1:
        t = t.reshape(1, -1)
    if t.dim() not in (2, 3):
        raise ViewerError(f"Expected a 2-D, 3-D or 4-D tensor, got {t.dim()}-D")
    if t.numel() == 0:
        raise ViewerError(NO_DATA)
    t = (t != 0).double() if mask or t.dtype == torch.bool else t.double()
    t = torch.nan_to_num(t, nan=0.0, posinf=0.0, neginf=0.0)
    return ([t] if t.dim() == 2 else list(t.unbind(0))), t.dim() == 3


def is_causal(m: torch.Tensor) -> bool:
    """Square, nothing above the diagonal, something positive below it: a causal pattern."""
    if m.dim() != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 2:
        return False
    upper = torch.triu(m, diagonal=1)
    lower = torch.tril(m, diagonal=-1)
    return bool((upper == 0).all()) and bool((lower > 0).any())


def row_normalise(m: torch.Tensor) -> torch.Tensor:
    """Each row on its own scale (attention weights): min over the row's non-zero cells to its
    max; zero (masked) cells read 0; a row whose range is at most 1e-9 reads 0.5."""
    out = torch.zeros_like(m, dtype=torch.float64)
    for i, row in enumerate(m.double()):
        nonzero = row[row != 0]
        if nonzero.numel() == 0:
            continue
        lo, hi = nonzero.min().item(), row.max().item()
        if hi - lo <= 1e-9:
            out[i] = torch.where(row != 0, 0.5, 0.0)
        else:
            out[i] = torch.where(row != 0, ((row - lo) / (hi - lo)).clamp(0, 1), 0.0)
    return out


def absolute(m: torch.Tensor) -> torch.Tensor:
    return m.double().clamp(0, 1)


def token_labels(labels: Any, n: int, prefix: str) -> list[str]:
    """Names of n rows or columns: the labels given (as many as there are), else q{i} / k{j}."""
    given = [str(v) for v in labels] if isinstance(labels, (list, tuple)) else []
    return [given[i] if i < len(given) else f"{prefix}{i}" for i in range(n)]


def tooltip(head: int | None, i: int, j: int, v: float, row: str, col: str) -> str:
    where = f"head {head} · " if head is not None else ""
    return f"{where}w[{i}, {j}] = {v:.3f}\n{row} → {col}"


@dataclass
class HeatCell:
    x: str
    y: str
    w: str
    h: str
    fill: str
    tip: str
    striped: bool = False


@dataclass
class HeatPanel:
    title: str              # "h0", "h1" ... ("" for a single matrix)
    x: float
    y: float
    size_w: float
    size_h: float
    cells: list[HeatCell] = field(default_factory=list)
    row_labels: list[tuple[str, str, str]] = field(default_factory=list)   # x, y, text
    col_labels: list[tuple[str, str, str]] = field(default_factory=list)   # x, y, text (rotated 45° there)


@dataclass
class Heatmap:
    """One heatmap picture: a card's inline one or a viewer page's large one."""

    kind: str = "heatmap"
    viewer: bool = True
    title: str = ""
    width: float = 0
    height: float = 0
    panels: list[HeatPanel] = field(default_factory=list)
    message: str = ""            # instead of the picture: too large, no data, expected tensor
    seq_len: int = 0
    row_normalised: bool = False
    colormap: str = DEFAULT_COLORMAP
    font: float = 7
    key: str = ""

    @property
    def footer(self) -> str:
        return f"seq_len = {self.seq_len}" + (ROW_NORMALISED if self.row_normalised else "")


LABEL_LIMIT = 16           # axis labels only for at most this many tokens
INLINE_LIMIT = 256         # elements: more and the card says TOO_LARGE
CARD_PICTURE_W = 168


def heatmap(value: Any, row_labels: Any = None, col_labels: Any = None, *, mask: bool = False,
            colormap: str = DEFAULT_COLORMAP, panel_px: float = 480, columns: int = 4, font: float = 12,
            inline_limit: int | None = None, gap: float = 16) -> Heatmap:
    """The heatmap of a captured value, laid out: one panel per head, ``columns`` panels a row,
    each at most ``panel_px`` on its longer side. With ``inline_limit`` a larger tensor gives
    the TOO_LARGE message instead (a card)."""
    colormap = colormap_name(colormap)
    try:
        if inline_limit is not None and isinstance(value, torch.Tensor) and value.numel() > inline_limit:
            return Heatmap(message=TOO_LARGE, title=TOO_LARGE, colormap=colormap)
        panels, heads = panels_of(value, mask)
    except ViewerError as exc:
        return Heatmap(message=str(exc), title=str(exc), colormap=colormap)
    n_rows, n_cols = panels[0].shape
    labelled = max(n_rows, n_cols) <= LABEL_LIMIT
    rows = token_labels(row_labels, n_rows, "q")
    cols = token_labels(col_labels if col_labels else row_labels, n_cols, "k")
    normalise = not mask
    longest = max((len(s) for s in rows + cols), default=1)
    label_w = min(longest, 10) * font * 0.6 + 4 if labelled else 0
    title_h = font + 6 if heads else 0
    cell = panel_px / max(n_rows, n_cols)
    pw, ph = cell * n_cols, cell * n_rows
    columns = max(1, min(columns, len(panels)))
    block_w, block_h = label_w + pw + gap, title_h + ph + label_w * 0.75 + gap
    out = Heatmap(colormap=colormap, seq_len=n_cols, row_normalised=normalise, font=font,
                  width=round(block_w * columns - gap, 1),
                  height=round(block_h * math.ceil(len(panels) / columns) - gap, 1),
                  title=(f"Attention {'mask' if mask else 'weights'}, {len(panels)} head{'s' * (len(panels) != 1)}"
                         if heads else f"Attention {'mask' if mask else 'weights'}") + f" [{n_rows} × {n_cols}]")
    for k, m in enumerate(panels):
        causal = is_causal(1 - m) if mask else is_causal(m)   # a mask marks the blocked cells
        shade = row_normalise(m) if normalise else absolute(m)
        x0 = (k % columns) * block_w + label_w
        y0 = (k // columns) * block_h + title_h
        panel = HeatPanel(f"h{k}" if heads else "", x0, y0, pw, ph)
        values, shades = m.tolist(), shade.tolist()
        for i in range(n_rows):
            for j in range(n_cols):
                striped = causal and j > i
                panel.cells.append(HeatCell(
                    f"{x0 + j * cell:.2f}", f"{y0 + i * cell:.2f}", f"{cell + 0.3:.2f}", f"{cell + 0.3:.2f}",
                    colour(colormap, 0.0 if striped and not mask else shades[i][j]),
                    tooltip(k if heads else None, i, j, values[i][j], rows[i], cols[j]), striped))
        if labelled:
            panel.row_labels = [(f"{x0 - 3:.1f}", f"{y0 + (i + 0.5) * cell + font * 0.35:.1f}", rows[i])
                                for i in range(n_rows)]
            panel.col_labels = [(f"{x0 + (j + 0.5) * cell:.1f}", f"{y0 + ph + 4:.1f}", cols[j])
                                for j in range(n_cols)]
        out.panels.append(panel)
    return out


def card_heatmap(value: Any, row_labels: Any = None, col_labels: Any = None, *, mask: bool = False,
                 colormap: str = DEFAULT_COLORMAP) -> Heatmap:
    """The inline heatmap on a card, CARD_PICTURE_W wide: heads side by side (two a row)."""
    count = value.shape[-3] if isinstance(value, torch.Tensor) and value.dim() >= 3 else 1
    columns = min(count, 2)
    n = max(value.shape[-2:]) if isinstance(value, torch.Tensor) and value.dim() >= 2 else 1
    labelled = n <= LABEL_LIMIT
    label_w = 26 if labelled else 0
    panel = (CARD_PICTURE_W - columns * label_w - (columns - 1) * 6) / columns
    picture = heatmap(value, row_labels, col_labels, mask=mask, colormap=colormap, panel_px=min(panel, 96),
                      columns=columns, font=6, inline_limit=INLINE_LIMIT, gap=6)
    if picture.message:
        picture.width, picture.height = CARD_PICTURE_W, 18
    return picture


def full_panel_px(seq: int, share: float) -> float:
    """A full viewer's panel: max(280, min(share of the viewport, cap)), the cap by sequence length."""
    cap = 480 if seq <= 6 else 600 if seq <= 12 else 760 if seq <= 20 else 1200
    return max(280.0, min(share, cap))


# -- the scatter's numbers -------------------------------------------------------------------

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#393b79", "#ad494a")   # the 12-colour cycle
NEAREST = 60
ZOOM_MIN, ZOOM_MAX, ZOOM_STEP = 25.0, 50_000.0, 1.4
FIT_SHARE = 0.88
INLINE_W, INLINE_H = 320, 240
INLINE_POINTS_LIMIT = 2000        # more and the card says SCATTER_TOO_MANY
INLINE_LABELS_LIMIT = 40          # the card writes every label up to this many points
MAX_POINTS = 100_000              # the viewer page's (and plotly's) bound: points_2d of at most 200,000 numbers


def points_of(value: Any) -> list[tuple[float, float]]:
    """[N, 2] as (x, y) pairs (non-finite numbers read 0)."""
    if not isinstance(value, torch.Tensor):
        raise ViewerError(expected_tensor(value))
    if value.dim() != 2 or value.shape[1] != 2:
        raise ViewerError(f"Expected points of shape [N, 2], got {list(value.shape)}")
    if value.shape[0] == 0:
        raise ViewerError(NO_POINTS)
    if value.shape[0] > MAX_POINTS:
        raise ViewerError(f"{value.shape[0]:,} points are more than the viewer draws ({MAX_POINTS:,})")
    t = torch.nan_to_num(value.detach().cpu().double(), nan=0.0, posinf=0.0, neginf=0.0)
    return [(x, y) for x, y in t.tolist()]


UNNAMED_POINTS = "#0, #1, … are the rows of points_2d in order: wire a list of words into labels to name them."


def point_labels(labels: Any, n: int) -> list[str]:
    """Each point's name: its label, or "#i" for an unlabelled one (what the filter matches)."""
    given = [str(v) for v in labels] if isinstance(labels, (list, tuple)) else []
    return [given[i] if i < len(given) and given[i] != "" else f"#{i}" for i in range(n)]


def bounds(points: Sequence[tuple[float, float]]) -> tuple[float, float, float, float]:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return min(xs), max(xs), min(ys), max(ys)


def fit_scale(points: Sequence[tuple[float, float]], plot_w: float, plot_h: float) -> float:
    """Pixels per unit at 100 %: 0.88·min(plotW/xRange, plotH/yRange)."""
    x0, x1, y0, y1 = bounds(points)
    xr, yr = (x1 - x0) or 1.0, (y1 - y0) or 1.0
    return FIT_SHARE * min(plot_w / xr, plot_h / yr)


def data_centre(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    x0, x1, y0, y1 = bounds(points)
    return (x0 + x1) / 2, (y0 + y1) / 2


def clamp_zoom(percent: float) -> float:
    """Zoom as a percentage of fit, kept within 25 %–50 000 %."""
    if not math.isfinite(percent):
        return 100.0
    return min(ZOOM_MAX, max(ZOOM_MIN, percent))


def nearest(points: Sequence[tuple[float, float]], centre: tuple[float, float], labels: Sequence[str],
            text: str = "", n: int = NEAREST) -> list[int]:
    """The n points nearest the centre whose name contains ``text`` (case-insensitive)."""
    needle = text.strip().lower()
    cx, cy = centre
    matching = [i for i, name in enumerate(labels) if needle in name.lower()] if needle else range(len(points))
    return sorted(matching, key=lambda i: ((points[i][0] - cx) ** 2 + (points[i][1] - cy) ** 2, i))[:n]


@dataclass
class Dot:
    index: int
    x: str
    y: str
    fill: str
    tip: str
    label: str = ""          # written next to the dot ("" : not written)
    lx: str = ""
    ly: str = ""


@dataclass
class Scatter:
    kind: str = "scatter"
    viewer: bool = True
    title: str = ""
    width: float = INLINE_W
    height: float = INLINE_H
    dots: list[Dot] = field(default_factory=list)
    axes: list[tuple[str, str, str, str]] = field(default_factory=list)   # x1, y1, x2, y2
    crosshair: list[tuple[str, str, str, str]] = field(default_factory=list)
    message: str = ""
    count: int = 0
    zoom: float = 100.0
    hidden: int = 0
    key: str = ""
    font: float = 10
    legend: str = ""   # what the points' names mean, when they are numbers

    @property
    def footer(self) -> str:
        return f"{self.count} points · {self.zoom:.0f}% · {self.hidden} hidden"


def scatter(value: Any, labels: Any = None, *, width: float = INLINE_W, height: float = INLINE_H,
            centre: tuple[float, float] | None = None, zoom: float = 100.0, hidden: frozenset[int] = frozenset(),
            named: Sequence[int] | None = None, inline: bool = True, font: float = 10) -> Scatter:
    """The scatter of points_2d: fitted at zoom 100 % round the data's centre, or the view a
    viewer page asks for (centre in data units, zoom in % of fit). ``named``: the points whose
    labels are written (the viewer's 60 nearest); inline, every label up to INLINE_LABELS_LIMIT."""
    try:
        if inline and isinstance(value, torch.Tensor) and value.dim() == 2 and value.shape[0] > INLINE_POINTS_LIMIT:
            raise ViewerError(SCATTER_TOO_MANY)
        points = points_of(value)
    except ViewerError as exc:
        return Scatter(message=str(exc), title=str(exc), width=width, height=height if not inline else 20)
    names = point_labels(labels, len(points))
    given = isinstance(labels, (list, tuple)) and len(labels) > 0
    zoom = clamp_zoom(zoom)
    cx, cy = centre if centre is not None else data_centre(points)
    scale = fit_scale(points, width, height) * zoom / 100
    out = Scatter(width=width, height=height, count=len(points), zoom=zoom, hidden=len(hidden), font=font,
                  title=f"Embedding scatter of {len(points)} points", legend="" if given else UNNAMED_POINTS)

    def sx(x: float) -> float:
        return width / 2 + (x - cx) * scale

    def sy(y: float) -> float:
        return height / 2 - (y - cy) * scale

    x0, x1, y0, y1 = bounds(points)
    if x0 < 0 < x1 and 0 <= sx(0) <= width:   # zero axes only when the data cross 0
        out.axes.append((f"{sx(0):.1f}", "0", f"{sx(0):.1f}", f"{height}"))
    if y0 < 0 < y1 and 0 <= sy(0) <= height:
        out.axes.append(("0", f"{sy(0):.1f}", f"{width}", f"{sy(0):.1f}"))
    write = set(named) if named is not None else (set(range(len(points))) if len(points) <= INLINE_LABELS_LIMIT else set())
    for i, (x, y) in enumerate(points):
        if i in hidden:
            continue
        px, py = sx(x), sy(y)
        if not (-28 <= px <= width + 28 and -28 <= py <= height + 28):   # far outside: culled
            continue
        name = names[i] if given and not names[i].startswith("#") else f"pt {i}"
        dot = Dot(i, f"{px:.1f}", f"{py:.1f}", PALETTE[i % len(PALETTE)], f"{name}\n({x:.3f}, {y:.3f})")
        if i in write and (given or not inline):
            dot.label, dot.lx, dot.ly = names[i], f"{px + 5:.1f}", f"{py - 4:.1f}"
        out.dots.append(dot)
    if not inline:
        out.crosshair = [(f"{width / 2 - 8:.1f}", f"{height / 2:.1f}", f"{width / 2 + 8:.1f}", f"{height / 2:.1f}"),
                         (f"{width / 2:.1f}", f"{height / 2 - 8:.1f}", f"{width / 2:.1f}", f"{height / 2 + 8:.1f}")]
    return out


# -- what the plotly viewer draws (its frame page's JSON; static/js/viewer-frame.js) ----------

FRAME_HEATMAP_LIMIT = 4096        # elements the JavaScript heatmap viewer draws (reference §14)
SHORTEN = "Re-run with a shorter sequence."


# A causal pattern's blocked cells are hatched. Attention weights there are 0, drawn dark, so
# the hatching is light; a mask's blocked cells are 1, drawn bright (dark cells are the ones
# a token may attend to), so its hatching is dark.
STRIPES, STRIPES_ON_MASK = "rgba(255,255,255,0.45)", "rgba(0,0,0,0.45)"


def heatmap_data(value: Any, row_labels: Any = None, col_labels: Any = None, *, mask: bool = False,
                 colormap: str = DEFAULT_COLORMAP) -> dict[str, Any]:
    """The heatmap viewer's numbers for plotly, by this module's rules: per panel the colours
    (row-normalised, or absolute for a mask; a causal pattern's upper cells striped, and at 0
    in attention weights)
    and each cell's tooltip. {"status": ...} instead when there is nothing to draw."""
    if isinstance(value, torch.Tensor):
        shown = value.numel() // max(value.shape[0], 1) if value.dim() == 4 else value.numel()   # 4-D: batch 0
        if shown > FRAME_HEATMAP_LIMIT:
            return {"status": couldnt_load(f"the weights have {shown:,} numbers, more than {FRAME_HEATMAP_LIMIT:,}. {SHORTEN}")}
    try:
        panels, heads = panels_of(value, mask)
    except ViewerError as exc:
        return {"status": str(exc)}
    n_rows, n_cols = panels[0].shape
    rows = token_labels(row_labels, n_rows, "q")
    cols = token_labels(col_labels if col_labels else row_labels, n_cols, "k")
    out: dict[str, Any] = {
        "kind": "heatmap", "status": "", "what": "mask" if mask else "weights", "heads": heads,
        "rows": rows, "cols": cols, "labelled": max(n_rows, n_cols) <= LABEL_LIMIT, "seq_len": n_cols,
        "footer": Heatmap(seq_len=n_cols, row_normalised=not mask).footer, "colormap": colormap_name(colormap),
        "colormaps": {name: colorscale(name) for name in COLORMAPS}, "panels": [],
        "stripes": STRIPES_ON_MASK if mask else STRIPES,
    }
    for k, m in enumerate(panels):
        causal = is_causal(1 - m) if mask else is_causal(m)   # a mask marks the blocked cells
        shade = (absolute(m) if mask else row_normalise(m)).tolist()
        values = m.tolist()
        if causal and not mask:
            shade = [[0.0 if j > i else x for j, x in enumerate(row)] for i, row in enumerate(shade)]
        out["panels"].append({
            "title": f"h{k}" if heads else "", "causal": causal,
            "z": [[round(x, 5) for x in row] for row in shade],
            "tips": [[tooltip(k if heads else None, i, j, values[i][j], rows[i], cols[j]).replace("\n", "<br>")
                      for j in range(n_cols)] for i in range(n_rows)],
        })
    return out


def scatter_data(value: Any, labels: Any = None) -> dict[str, Any]:
    """The scatter viewer's points for plotly: coordinates, each point's name (what the filter
    matches: its label or #i), its tooltip name (label or "pt N"), and the viewer's numbers."""
    try:
        points = points_of(value)
    except ViewerError as exc:
        return {"status": str(exc)}
    names = point_labels(labels, len(points))
    given = isinstance(labels, (list, tuple)) and len(labels) > 0
    return {
        "kind": "scatter", "status": "", "x": [round(p[0], 6) for p in points], "y": [round(p[1], 6) for p in points],
        "names": names, "tips": [n if given and not n.startswith("#") else f"pt {i}" for i, n in enumerate(names)],
        "palette": list(PALETTE), "nearest": NEAREST, "zoom_min": ZOOM_MIN, "zoom_max": ZOOM_MAX,
        "zoom_step": ZOOM_STEP, "fit_share": FIT_SHARE, "no_match": NO_MATCH, "footer": Scatter(count=len(points)).footer,
        "legend": "" if given else UNNAMED_POINTS,
    }


# -- a viewer page's query (no JavaScript): bounded and validated ----------------------------


def number(raw: Any, default: float) -> float:
    try:
        value = float(str(raw)[:40])
    except ValueError:
        return default
    return value if math.isfinite(value) else default


def hidden_set(raw: Any, n: int) -> frozenset[int]:
    """"1,5,7" -> the point indices in range; anything else drops out."""
    out = set()
    for piece in str(raw or "")[:20_000].split(","):
        piece = piece.strip()
        if piece.isdigit() and int(piece) < n:
            out.add(int(piece))
    return frozenset(out)


def view_query(points: Sequence[tuple[float, float]], query: Any) -> tuple[tuple[float, float], float]:
    """(centre, zoom) a page's query asks for: the centre kept within the data's span on
    each side (a hand-edited URL cannot wander off), the zoom within 25 %–50 000 %."""
    dcx, dcy = data_centre(points)
    x0, x1, y0, y1 = bounds(points)
    xr, yr = (x1 - x0) or 1.0, (y1 - y0) or 1.0
    cx = min(x1 + xr, max(x0 - xr, number(query.get("cx"), dcx)))
    cy = min(y1 + yr, max(y0 - yr, number(query.get("cy"), dcy)))
    return (cx, cy), clamp_zoom(number(query.get("zoom"), 100.0))


# -- a card's picture ------------------------------------------------------------------------

BUTTON_ROW_H = 24   # the card's View full / Open detailed view button under the picture


def card_picture(spec: ViewerSpec, value: Any, rows: Any, cols: Any, params: dict[str, Any]) -> Heatmap | Scatter:
    """The inline picture on a viewer node's card; ``card_h`` is the room it takes on the card."""
    if spec.kind == "scatter":
        made: Heatmap | Scatter = scatter(value, rows, width=INLINE_W, height=INLINE_H, font=11)
        shown_h = made.height * CARD_PICTURE_W / made.width if not made.message else 18
    else:
        made = card_heatmap(value, rows, cols, mask=spec.mask, colormap=params.get("colormap", DEFAULT_COLORMAP))
        shown_h = made.height
    made.card_h = math.ceil(shown_h) + BUTTON_ROW_H + 8   # type: ignore[attr-defined]
    made.spec = spec                                      # type: ignore[attr-defined]
    return made
