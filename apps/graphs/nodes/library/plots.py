"""Picture nodes: Visualize, ScatterPlot2D and DecisionBoundary draw a PNG on the server.

Drawn with matplotlib's object API (``Figure`` and the Agg canvas, never pyplot, whose global
state is not thread-safe), at one fixed size a class can read from the back of the room, with
colour-blind-safe colours (viridis, tab10) and markers that differ by class, so colour is never
the only signal. matplotlib is imported on a node's first run, not when the server starts.
Every size that is not a torch op (points, cells, pixels, grid) is bounded before drawing.
"""
from __future__ import annotations

import functools
import io
import os
import threading
from typing import Any

import numpy as np
import torch

from codefyui import conf

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode, class_labels, shape_str
from ._images import PngImage

CATEGORY = "Utility"

WIDTH, HEIGHT, DPI = 640, 420, 100      # px: 6.4 × 4.2 inches at 100 dpi
FONT = 11                               # pt: labels and ticks; the title one larger
MAX_SERIES_POINTS = 100_000             # a line's values (each series of a dict too)
MAX_SERIES = 10                         # lines in one plot (tab10 has ten colours)
MAX_HISTOGRAM_VALUES = 10_000_000
HISTOGRAM_BINS = 40
MAX_HEATMAP_CELLS = 1_000_000           # 1000 × 1000
MAX_IMAGE_PIXELS = 4_194_304            # 2048 × 2048
MAX_POINTS = 100_000                    # scatter and decision-boundary training points
MAX_CLASSES = 20
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")

_SETUP = threading.Lock()
_DRAW = threading.Lock()   # one picture at a time per process: matplotlib's font and text caches are shared
_ready = False


def _one_at_a_time(run):
    """A plot node's run, holding _DRAW (nodes of one run may compute side by side)."""
    @functools.wraps(run)
    def drawing(self, ctx, params, **inputs):
        with _DRAW:
            return run(self, ctx, params, **inputs)
    return drawing


def _matplotlib():
    """matplotlib's Figure and Agg canvas, with a config folder under the server's var dir
    (its font cache is written there, never into $HOME)."""
    global _ready
    with _SETUP:
        if not _ready:
            if not os.environ.get("MPLCONFIGDIR"):
                folder = conf.VAR_DIR / "matplotlib"
                folder.mkdir(parents=True, exist_ok=True)
                os.environ["MPLCONFIGDIR"] = str(folder)
            import matplotlib  # noqa: F401  (the import reads MPLCONFIGDIR once)
            _ready = True
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    return Figure, FigureCanvasAgg


def new_figure():
    Figure, Canvas = _matplotlib()
    fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI, layout="constrained")
    Canvas(fig)
    return fig


def to_png(fig, title: str) -> PngImage:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return PngImage(buffer.getvalue(), WIDTH, HEIGHT, title)


def _label_axes(ax, x: str, y: str, title: str) -> None:
    ax.set_xlabel(x, fontsize=FONT)
    ax.set_ylabel(y, fontsize=FONT)
    ax.tick_params(labelsize=FONT - 1)
    if title:
        ax.set_title(title, fontsize=FONT + 2)


def _span(values: np.ndarray) -> str:
    finite = values[np.isfinite(values)]
    if not finite.size:
        return "no finite values"
    return f"from {_num(finite.min())} to {_num(finite.max())}"


def _num(v: float) -> str:
    v = float(v)
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:.4g}"


def _numeric(value: Any, node: str, port: str) -> np.ndarray:
    """A tensor, a list of numbers (nested lists too) or a number as a float array."""
    if isinstance(value, torch.Tensor):
        if value.is_complex():
            raise NodeError(f"{node}: '{port}' is a complex tensor; plot its real part or its absolute value")
        return value.detach().cpu().double().numpy()
    if isinstance(value, bool | int | float):
        return np.asarray([float(value)])
    if isinstance(value, list | tuple):
        if not value:
            raise NodeError(f"{node}: '{port}' is an empty list: there is nothing to draw")
        items = [v.detach().cpu().double().numpy() if isinstance(v, torch.Tensor) else v for v in value]
        try:
            array = np.asarray(items, dtype=float)
        except (TypeError, ValueError):
            raise NodeError(f"{node}: '{port}' needs numbers (a list of numbers, or lists of the same "
                            "length); this list holds something else or rows of different lengths") from None
        return array
    raise NodeError(f"{node}: '{port}' cannot be drawn: it is a {type(value).__name__}. Connect a tensor, a "
                    "list of numbers, a dict of lists or a picture")


# -- Visualize ------------------------------------------------------------------------------

@register
class Visualize(LibraryNode):
    type = "Visualize"
    category = CATEGORY
    description = "Draws its input as a picture: a line, a histogram, a heat map or an image."
    details = (
        "Connect a tensor, a list of numbers (such as TrainingLoop's losses) or a dict of lists "
        "(several lines with a legend) and choose 'plot_type'. 'line' draws a 1-D tensor or a "
        "[1, N] row as a curve, value against position; 'histogram' counts how many values fall "
        "in each of 40 equal ranges, which shows how the numbers are spread; 'heatmap' colours "
        "each number of a 2-D tensor (dark purple for small, yellow for large; a bigger tensor "
        "shows its first 2-D slice and says which); 'image' shows [H, W] as grey and "
        "[C, H, W] with 3 channels in colour (a batch [N, C, H, W] shows its first picture). "
        "A picture arriving from another node passes through unchanged. The picture shows on "
        "the node's card and in the Inspector, where it can be downloaded as a PNG."
    )
    inputs = (Port("data", "ANY", description="What to draw: a tensor, a list of numbers, a dict of lists"),)
    outputs = (Port("image", "IMAGE", description="The picture (PNG)"),)
    params = (
        Param("title", "string", "", "Written above the picture"),
        Param("plot_type", "select", "line", "How to draw the data: line, histogram, heatmap or image",
              options=("line", "histogram", "heatmap", "image")),
    )

    @_one_at_a_time
    def run(self, ctx, params, data):
        title, kind = params["title"].strip(), params["plot_type"]
        if isinstance(data, PngImage):
            return {"image": PngImage(data.data, data.width, data.height, title or data.title)}
        if data is None:
            raise NodeError("Visualize: 'data' received nothing; connect the output you want to draw")
        if isinstance(data, dict):
            if kind != "line":
                raise NodeError(f"Visualize: a dict of lists draws as lines, one per key; set plot_type to "
                                f"line (it is {kind}), or connect one list for a {kind}")
            return {"image": self._lines(ctx, data, title)}
        values = _numeric(data, "Visualize", "data")
        shape = list(data.shape) if isinstance(data, torch.Tensor) else list(values.shape)
        ctx.check_size(values.size, "Visualize's data")
        if values.size == 0:
            raise NodeError(f"Visualize: 'data' is empty (shape {shape_str(shape)}): there is nothing to draw")
        draw = {"line": self._line, "histogram": self._histogram, "heatmap": self._heatmap, "image": self._image}[kind]
        return {"image": draw(ctx, values, shape, title)}

    def _line(self, ctx, values, shape, title):
        if values.ndim == 2 and values.shape[0] == 1:
            values = values[0]
        if values.ndim == 0:
            values = values.reshape(1)
        if values.ndim != 1:
            raise NodeError(f"Visualize: a line needs 1-D data or a [1, N] row, but 'data' has shape "
                            f"{shape_str(shape)}; choose plot_type heatmap (2-D) or histogram (any shape), "
                            "or Reshape it to one row")
        _check_points(values.size, "Visualize", "line")
        fig = new_figure()
        ax = fig.add_subplot()
        ax.plot(np.arange(values.size), values, color="#1f77b4", linewidth=2,
                marker="o" if values.size <= 40 else None, markersize=4)
        ax.grid(True, alpha=0.3)
        _label_axes(ax, "position (index)", "value", title)
        return to_png(fig, f"{title or 'Line'}: {values.size} values {_span(values)}")

    def _lines(self, ctx, data, title):
        series = {}
        for key, value in data.items():
            if isinstance(value, list | tuple) or (isinstance(value, torch.Tensor) and value.dim() == 1):
                if len(value) == 0:
                    continue
                array = _numeric(value, "Visualize", f"data[{key!r}]")
                if array.ndim != 1:
                    raise NodeError(f"Visualize: 'data[{key!r}]' must be a list of numbers to draw as a line")
                _check_points(array.size, "Visualize", f"line {key!r}")
                series[str(key)] = array
        if not series:
            raise NodeError("Visualize: the dict in 'data' holds no non-empty list of numbers to draw; "
                            "connect e.g. TrainingLoop's 'losses'")
        if len(series) > MAX_SERIES:
            raise NodeError(f"Visualize: the dict in 'data' has {len(series)} lists; at most {MAX_SERIES} "
                            "lines fit one readable picture")
        fig = new_figure()
        ax = fig.add_subplot()
        colours = _tab10()
        for i, (key, array) in enumerate(series.items()):
            ax.plot(np.arange(array.size), array, color=colours[i % 10], linewidth=2, label=key,
                    marker=MARKERS[i % len(MARKERS)] if array.size <= 40 else None, markersize=5,
                    linestyle=("-", "--", ":", "-.")[i % 4])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=FONT - 1)
        _label_axes(ax, "position (index)", "value", title)
        names = ", ".join(f"{k} ({a.size} values {_span(a)})" for k, a in series.items())
        return to_png(fig, f"{title or 'Lines'}: {names}")

    def _histogram(self, ctx, values, shape, title):
        if values.size > MAX_HISTOGRAM_VALUES:
            raise NodeError(f"Visualize: a histogram of {values.size:,} values is more than the "
                            f"{MAX_HISTOGRAM_VALUES:,} it draws; pass a smaller part")
        flat = values.reshape(-1)
        finite = flat[np.isfinite(flat)]
        if not finite.size:
            raise NodeError("Visualize: 'data' has no finite values (only NaN or infinity) to count")
        fig = new_figure()
        ax = fig.add_subplot()
        ax.hist(finite, bins=HISTOGRAM_BINS, color="#1f77b4", edgecolor="white")
        ax.grid(True, axis="y", alpha=0.3)
        _label_axes(ax, "value", "how many values", title)
        left_out = flat.size - finite.size
        note = f" ({left_out} NaN or infinite values left out)" if left_out else ""
        return to_png(fig, f"{title or 'Histogram'}: {finite.size} values of shape {shape_str(shape)} "
                           f"{_span(finite)} in {HISTOGRAM_BINS} bins{note}")

    def _heatmap(self, ctx, values, shape, title):
        where = ""
        if values.ndim <= 1:
            values = values.reshape(1, -1)
        elif values.ndim > 2:
            lead = values.ndim - 2
            values = values[(0,) * lead]
            where = f", slice [{', '.join(['0'] * lead)}, :, :]"
        cells = values.size
        if cells > MAX_HEATMAP_CELLS:
            raise NodeError(f"Visualize: a heat map of {values.shape[0]} × {values.shape[1]} = {cells:,} cells "
                            f"is more than the {MAX_HEATMAP_CELLS:,} it draws; pass a smaller slice")
        fig = new_figure()
        ax = fig.add_subplot()
        shown = np.where(np.isfinite(values), values, np.nan)
        im = ax.imshow(shown, aspect="auto", cmap="viridis", interpolation="nearest")
        bar = fig.colorbar(im, ax=ax)
        bar.ax.tick_params(labelsize=FONT - 1)
        heading = title or (f"{shape_str(shape)}{where}" if where else "")
        _label_axes(ax, "column", "row", heading)
        if where and title:
            ax.set_title(f"{title}\n{shape_str(shape)}{where}", fontsize=FONT + 1)
        return to_png(fig, f"{title or 'Heat map'}: {values.shape[0]} × {values.shape[1]} values of "
                           f"{shape_str(shape)}{where} {_span(values)}")

    def _image(self, ctx, values, shape, title):
        which = ""
        if values.ndim == 4:
            if values.shape[0] > 1:
                which = f" (picture 0 of a batch of {values.shape[0]})"
            values = values[0]
        if values.ndim == 3 and values.shape[0] in (1, 3, 4):   # [C, H, W] -> [H, W, C]
            values = np.transpose(values, (1, 2, 0))
        if values.ndim == 3 and values.shape[-1] == 1:
            values = values[..., 0]
        if values.ndim not in (2, 3) or (values.ndim == 3 and values.shape[-1] not in (3, 4)):
            raise NodeError(f"Visualize: an image needs [H, W], [C, H, W] or [N, C, H, W] with 1, 3 or 4 channels, "
                            f"but 'data' has shape {shape_str(shape)}; choose plot_type heatmap or histogram")
        height, width = values.shape[:2]
        if height * width > MAX_IMAGE_PIXELS:
            raise NodeError(f"Visualize: an image of {width} × {height} pixels is more than the "
                            f"{MAX_IMAGE_PIXELS:,} pixels it draws; Resize it first")
        finite = values[np.isfinite(values)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        scaled = ""
        if lo >= 0 and hi <= 1:
            pass
        elif lo >= 0 and hi <= 255:
            values = values / 255.0
            scaled = ", values 0…255"
        else:
            values = (values - lo) / ((hi - lo) or 1.0)
            scaled = f", stretched from {_num(lo)}…{_num(hi)} to black…white"
        values = np.clip(np.nan_to_num(values, nan=0.0), 0.0, 1.0)
        fig = new_figure()
        ax = fig.add_subplot()
        ax.imshow(values, cmap="gray" if values.ndim == 2 else None, vmin=0.0, vmax=1.0, interpolation="nearest")
        _label_axes(ax, "x (pixel)", "y (pixel)", title)
        colour = "grey" if values.ndim == 2 else "colour"
        return to_png(fig, f"{title or 'Image'}: {width} × {height} {colour} picture of {shape_str(shape)}"
                           f"{which}{scaled}")


def _check_points(n: int, node: str, what: str) -> None:
    if n > MAX_SERIES_POINTS:
        raise NodeError(f"{node}: a {what} of {n:,} values is more than the {MAX_SERIES_POINTS:,} it draws; "
                        "pass a shorter list or slice the tensor")


def _tab10() -> list:
    from matplotlib import colormaps
    cmap = colormaps["tab10"]
    return [cmap(i) for i in range(10)]


# -- ScatterPlot2D --------------------------------------------------------------------------

def _points(value: Any, node: str, port: str) -> np.ndarray:
    if not isinstance(value, torch.Tensor):
        raise NodeError(f"{node}: '{port}' needs a tensor of points [N, 2], got {type(value).__name__}")
    if value.dim() != 2 or value.shape[1] != 2:
        raise NodeError(f"{node}: '{port}' needs points of shape [N, 2] (one row per point, two features), "
                        f"got {shape_str(value.shape)}; pick two features or reduce them with PCA first")
    if value.shape[0] == 0:
        raise NodeError(f"{node}: '{port}' holds no points: there is nothing to draw")
    if value.shape[0] > MAX_POINTS:
        raise NodeError(f"{node}: {value.shape[0]:,} points are more than the {MAX_POINTS:,} it draws; "
                        "pass a sample of them")
    if value.is_complex():
        raise NodeError(f"{node}: '{port}' is a complex tensor; points need real numbers")
    return value.detach().cpu().double().numpy()


def _labels(value: Any, n: int, node: str, port: str) -> list[str]:
    labels = class_labels(value, port, node)
    if len(labels) != n:
        raise NodeError(f"{node}: '{port}' has {len(labels)} labels for {n} points; give one label per point")
    return labels


def _classes(labels: list[str]) -> list[str]:
    """Sorted as numbers when they all are ("2" before "10"), else as text."""
    unique = set(labels)
    try:
        return sorted(unique, key=float)
    except ValueError:
        return sorted(unique)


def _scatter_classes(ax, xy: np.ndarray, labels: list[str] | None, classes: list[str], edge: str = "white") -> None:
    colours = _tab10()
    size = 36 if len(xy) <= 500 else 14
    if labels is None:
        ax.scatter(xy[:, 0], xy[:, 1], s=size, color=colours[0], edgecolors=edge, linewidths=0.5)
        return
    array = np.asarray(labels)
    for i, name in enumerate(classes):
        mask = array == name
        ax.scatter(xy[mask, 0], xy[mask, 1], s=size, color=colours[i % 10], marker=MARKERS[i % len(MARKERS)],
                   edgecolors=edge, linewidths=0.5, label=f"class {name}")


@register
class ScatterPlot2D(LibraryNode):
    type = "ScatterPlot2D"
    category = CATEGORY
    description = "Draws points [N, 2] as dots on a plane, one colour and marker per class."
    details = (
        "Each row of 'points' is one dot: its first number is how far right, its second how "
        "far up. With 'labels' (one per point) every class gets its own colour and marker "
        "shape and a legend, so you can see whether the classes lie apart (a straight line "
        "could separate them) or mixed. Without labels every dot looks the same. Points with "
        "more than two features must be reduced first (pick two, or use PCA)."
    )
    inputs = (Port("points", description="The points, one row [x, y] each: shape [N, 2]"),
              Port("labels", "LIST", optional=True, description="One class label per point"))
    outputs = (Port("image", "IMAGE", description="The picture (PNG)"),)
    params = (Param("title", "string", "", "Written above the picture"),)

    @_one_at_a_time
    def run(self, ctx, params, points, labels=None):
        xy = _points(points, "ScatterPlot2D", "points")
        ctx.check_size(xy.size, "ScatterPlot2D's points")
        names = None if labels is None else _labels(labels, len(xy), "ScatterPlot2D", "labels")
        classes = _classes(names) if names is not None else []
        if len(classes) > MAX_CLASSES:
            raise NodeError(f"ScatterPlot2D: 'labels' has {len(classes)} classes; at most {MAX_CLASSES} can be "
                            "told apart in one picture")
        title = params["title"].strip()
        fig = new_figure()
        ax = fig.add_subplot()
        _scatter_classes(ax, xy, names, classes)
        if names is not None:
            ax.legend(fontsize=FONT - 1, title="labels", title_fontsize=FONT - 1)
        ax.grid(True, alpha=0.3)
        _label_axes(ax, "feature 0 (x)", "feature 1 (y)", title)
        what = f" in {len(classes)} classes ({', '.join(classes)})" if names is not None else ""
        return {"image": to_png(fig, f"{title or 'Scatter plot'}: {len(xy)} points{what}")}


# -- DecisionBoundary -----------------------------------------------------------------------

def _grid_labels(model: Any, grid: np.ndarray, node: str) -> list[str]:
    """What the model says for every grid point, as label text. Duck-typed: an object with
    ``predict`` (labels), one with ``scores`` and ``classes``, or a torch module (argmax)."""
    try:
        if hasattr(model, "predict") and callable(model.predict):
            predicted = model.predict(grid)
            if isinstance(predicted, torch.Tensor):
                predicted = predicted.reshape(-1).tolist()
            return class_labels(list(predicted), "model", node)
        if hasattr(model, "scores") and hasattr(model, "classes"):
            scores = np.asarray(model.scores(grid))
            return [str(model.classes[i]) for i in scores.reshape(len(grid), -1).argmax(axis=1)]
        if isinstance(model, torch.nn.Module):
            param = next(model.parameters(), None)
            x = torch.as_tensor(grid, dtype=param.dtype if param is not None and param.is_floating_point()
                                else torch.float32, device=param.device if param is not None else None)
            was_training = model.training
            model.eval()   # dropout off, batch norm's running statistics: the model's own answer
            try:
                with torch.no_grad():
                    out = model(x)
            finally:
                model.train(was_training)
            if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != len(grid):
                raise NodeError(f"{node}: the model gave {_what(out)} for {len(grid)} points; it must give one row "
                                "of class scores per point, [points, classes]")
            index = out.argmax(dim=1).tolist() if out.shape[1] > 1 else (out[:, 0] > 0).long().tolist()
            names = getattr(model, "classes", None)
            return [str(names[i]) if names is not None and i < len(names) else str(i) for i in index]
    except NodeError:
        raise
    except (RuntimeError, ValueError, TypeError, IndexError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise NodeError(f"{node}: the model could not label the plane's points: {first}. It must take two "
                        "features per point (trained on x_train [N, 2])") from exc
    raise NodeError(f"{node}: 'model' is a {type(model).__name__}, which cannot classify points; connect the "
                    "'model' output of a classifier node or a trained network")


def _what(out: Any) -> str:
    return f"a tensor of shape {shape_str(out.shape)}" if isinstance(out, torch.Tensor) else f"a {type(out).__name__}"


@register
class DecisionBoundary(LibraryNode):
    type = "DecisionBoundary"
    category = CATEGORY
    description = "Colours the plane by the class a trained classifier gives each point, with the training points on top."
    details = (
        "The plane around 'x_train' is covered with a grid of grid_steps × grid_steps points, "
        "and the 'model' is asked the class of every one; each region is shaded in its class's "
        "colour and the training points are drawn over it (colour and marker per class). Where "
        "two colours meet is the decision boundary: straight for linear and logistic "
        "regression, bendy for k-nearest neighbours, boxy for a decision tree. More grid steps "
        "give a smoother border and take longer. 'show_support_vectors' rings the points an "
        "SVM's border rests on (other models have none). Works for models trained on exactly "
        "two features."
    )
    inputs = (Port("model", "MODEL", description="A trained classifier (a classifier node's 'model')"),
              Port("x_train", description="The training points [N, 2]"),
              Port("y_train", "LIST", description="One class label per training point"))
    outputs = (Port("image", "IMAGE", description="The picture (PNG)"),)
    params = (
        Param("grid_steps", "int", 200, "Grid points along each axis: more is smoother and slower", min=20, max=500),
        Param("show_support_vectors", "bool", False, "Ring the SVM's support vectors (other models have none)"),
        Param("title", "string", "", "Written above the picture"),
    )

    @_one_at_a_time
    def run(self, ctx, params, model, x_train, y_train):
        node = "DecisionBoundary"
        if model is None:
            raise NodeError(f"{node}: 'model' received nothing; connect a classifier's 'model' output")
        if isinstance(x_train, torch.Tensor) and x_train.dim() == 2 and x_train.shape[1] != 2:
            raise NodeError(f"{node}: the plane has two axes, so the model must use exactly 2 features, but "
                            f"'x_train' has {x_train.shape[1]} (shape {shape_str(x_train.shape)}); train on two "
                            "features, or reduce them with PCA first")
        xy = _points(x_train, node, "x_train")
        labels = _labels(y_train, len(xy), node, "y_train")
        steps = params["grid_steps"]  # 20…500: the param's range, held before any node runs
        ctx.check_size(steps * steps * 2, f"{node}'s grid of {steps} × {steps} points")
        if not np.isfinite(xy).all():
            raise NodeError(f"{node}: 'x_train' holds NaN or infinite values; the plane's edges cannot be placed")
        (x0, y0), (x1, y1) = xy.min(axis=0), xy.max(axis=0)
        pad_x, pad_y = 0.1 * ((x1 - x0) or 1.0), 0.1 * ((y1 - y0) or 1.0)
        xs = np.linspace(x0 - pad_x, x1 + pad_x, steps)
        ys = np.linspace(y0 - pad_y, y1 + pad_y, steps)
        xx, yy = np.meshgrid(xs, ys)
        grid = np.column_stack([xx.ravel(), yy.ravel()])
        if ctx.cancelled():
            raise NodeError(f"{node}: stopped before drawing")
        predicted = _grid_labels(model, grid, node)
        if len(predicted) != len(grid):
            raise NodeError(f"{node}: the model labelled {len(predicted)} of the plane's {len(grid)} points; it "
                            "must label every point it is given")
        classes = _classes(labels + predicted)
        if len(classes) > MAX_CLASSES:
            raise NodeError(f"{node}: {len(classes)} classes cannot be told apart in one picture (at most "
                            f"{MAX_CLASSES})")
        index = {name: i for i, name in enumerate(classes)}
        zz = np.asarray([index[p] for p in predicted], dtype=float).reshape(xx.shape)

        from matplotlib.colors import BoundaryNorm, ListedColormap
        colours = _tab10()
        cmap = ListedColormap([colours[i % 10] for i in range(len(classes))])
        fig = new_figure()
        ax = fig.add_subplot()
        ax.pcolormesh(xx, yy, zz, cmap=cmap, norm=BoundaryNorm(np.arange(-0.5, len(classes)), cmap.N),
                      alpha=0.35, shading="auto")
        if len(classes) > 1:  # the border itself, in black: not colour alone
            ax.contour(xx, yy, zz, levels=np.arange(0.5, len(classes) - 0.5), colors="black", linewidths=1.0)
        _scatter_classes(ax, xy, labels, classes, edge="black")
        ringed = ""
        if params["show_support_vectors"]:
            support = getattr(model, "support_vectors", None)
            if support is None:
                support = getattr(getattr(model, "estimator", None), "support_vectors_", None)
            if support is not None and len(support):
                sv = np.asarray(support, dtype=float).reshape(-1, 2)
                ax.scatter(sv[:, 0], sv[:, 1], s=150, facecolors="none", edgecolors="black", linewidths=1.6,
                           label="support vectors")
                ringed = f", {len(sv)} support vectors ringed"
            else:
                ctx.log("DecisionBoundary: this model has no support vectors (only an SVM has them)")
        ax.set_xlim(xs[0], xs[-1])
        ax.set_ylim(ys[0], ys[-1])
        ax.legend(fontsize=FONT - 1, loc="best", framealpha=0.9)
        title = params["title"].strip()
        _label_axes(ax, "feature 0 (x)", "feature 1 (y)", title)
        alt = (f"{title or 'Decision boundary'}: the plane coloured by the class the model gives each of "
               f"{steps} × {steps} points, with {len(xy)} training points in {len(classes)} classes "
               f"({', '.join(classes)}){ringed}")
        return {"image": to_png(fig, alt)}
