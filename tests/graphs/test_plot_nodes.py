"""The picture nodes (library/plots.py): each draws a PNG of the fixed size that PIL decodes,
refuses bad input with a message naming the node and port, and bounds its work first."""
from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

from apps.graphs.nodes.base import NodeError, registry
from apps.graphs.nodes.library import plots
from apps.graphs.nodes.library._images import PngImage


def run(ctx, type_key, raw_params=None, **inputs):
    node = registry()[type_key]
    params, problems = node.coerce_params(raw_params or {})
    assert problems == []
    return node().run(ctx, params, **inputs)


def decoded(image: PngImage) -> Image.Image:
    assert isinstance(image, PngImage)
    picture = Image.open(io.BytesIO(image.data))
    picture.load()
    assert picture.format == "PNG"
    assert picture.size == (image.width, image.height) == (plots.WIDTH, plots.HEIGHT)
    return picture


def colours(picture: Image.Image) -> int:
    return len(picture.convert("RGB").getcolors(maxcolors=1 << 24))


# -- declarations -----------------------------------------------------------------------------

def test_the_nodes_are_declared_as_codefyui_has_them():
    nodes = registry()
    vis, scatter, boundary = nodes["Visualize"], nodes["ScatterPlot2D"], nodes["DecisionBoundary"]
    assert {n.category for n in (vis, scatter, boundary)} == {"Utility"}
    assert [p.name for p in vis.inputs] == ["data"] and [p.name for p in vis.outputs] == ["image"]
    assert {p.name: p.default for p in vis.params} == {"title": "", "plot_type": "line"}
    assert next(p for p in vis.params if p.name == "plot_type").options == ("line", "histogram", "heatmap", "image")
    assert [(p.name, p.type, p.optional) for p in scatter.inputs] == [("points", "TENSOR", False),
                                                                      ("labels", "LIST", True)]
    assert [(p.name, p.type) for p in boundary.inputs] == [("model", "MODEL"), ("x_train", "TENSOR"),
                                                           ("y_train", "LIST")]
    steps = next(p for p in boundary.params if p.name == "grid_steps")
    assert (steps.default, steps.min, steps.max) == (200, 20, 500)
    assert {p.name: p.default for p in boundary.params} == {"grid_steps": 200, "show_support_vectors": False,
                                                           "title": ""}
    for node in (vis, scatter, boundary):
        assert all(p.help for p in node.params)


def test_matplotlib_is_not_imported_with_the_catalogue():
    """The server's start does not pay for matplotlib: the module imports it on first use."""
    import ast
    import inspect
    tree = ast.parse(inspect.getsource(plots))
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    assert not any("matplotlib" in ast.dump(n) for n in top)


# -- Visualize ----------------------------------------------------------------------------

@pytest.mark.parametrize("plot_type, data", [
    ("line", torch.tensor([3.0, 1.0, 2.0, 5.0])),
    ("line", torch.arange(12.0).reshape(1, 12)),
    ("line", [0.9, 0.5, 0.3, 0.2]),
    ("histogram", torch.randn(3, 50, generator=torch.Generator().manual_seed(0))),
    ("heatmap", torch.arange(12.0).reshape(3, 4)),
    ("heatmap", torch.arange(24.0).reshape(2, 3, 4)),
    ("image", torch.rand(3, 8, 8, generator=torch.Generator().manual_seed(1))),
    ("image", torch.rand(2, 1, 8, 8, generator=torch.Generator().manual_seed(1))),
    ("image", torch.arange(64.0).reshape(8, 8) * 4),
])
def test_visualize_draws_each_plot_type(ctx, plot_type, data):
    out = run(ctx, "Visualize", {"plot_type": plot_type, "title": "My plot"}, data=data)
    picture = decoded(out["image"])
    assert colours(picture) > 3
    assert out["image"].title.startswith("My plot: ")


def test_visualize_says_what_it_drew(ctx):
    line = run(ctx, "Visualize", data=torch.tensor([1.0, 4.0, 2.0]))["image"]
    assert line.title == "Line: 3 values from 1 to 4"
    heat = run(ctx, "Visualize", {"plot_type": "heatmap"}, data=torch.zeros(2, 3, 4))["image"]
    assert "slice [0, :, :]" in heat.title and "[2, 3, 4]" in heat.title
    batch = run(ctx, "Visualize", {"plot_type": "image"}, data=torch.rand(5, 3, 4, 4))["image"]
    assert "picture 0 of a batch of 5" in batch.title and "colour" in batch.title


def test_visualize_draws_a_dict_of_lists_as_lines_with_a_legend(ctx):
    """TrainingLoop's losses and val_losses, side by side; its scalar entries are left out."""
    data = {"losses": torch.tensor([1.0, 0.6, 0.4]), "val_losses": [1.1, 0.8, 0.7], "best_epoch": 3}
    out = run(ctx, "Visualize", data=data)["image"]
    decoded(out)
    assert "losses (3 values" in out.title and "val_losses (3 values" in out.title


def test_visualize_passes_a_picture_through(ctx):
    picture = PngImage(b"\x89PNG...", 2, 2, "kept")
    assert run(ctx, "Visualize", data=picture)["image"] is not None
    assert run(ctx, "Visualize", data=picture)["image"].data == picture.data
    assert run(ctx, "Visualize", {"title": "new"}, data=picture)["image"].title == "new"


@pytest.mark.parametrize("params, data, message", [
    ({"plot_type": "line"}, torch.zeros(3, 4), "a line needs 1-D data or a [1, N] row, but 'data' has shape [3, 4]"),
    ({"plot_type": "image"}, torch.zeros(5, 6, 7, 8), "an image needs [H, W], [C, H, W] or [N, C, H, W]"),
    ({"plot_type": "image"}, torch.zeros(4), "'data' has shape [4]"),
    ({"plot_type": "histogram"}, {"losses": [1.0]}, "a dict of lists draws as lines"),
    ({}, {"best_epoch": 3}, "holds no non-empty list of numbers"),
    ({}, "hello", "it is a str"),
    ({}, [], "is an empty list"),
    ({}, [[1, 2], [3]], "rows of different lengths"),
    ({}, torch.zeros(0), "'data' is empty"),
    ({"plot_type": "histogram"}, torch.tensor([float("nan")]), "no finite values"),
    ({}, torch.zeros(3, dtype=torch.complex64), "complex tensor"),
    ({}, None, "received nothing"),
])
def test_visualize_refuses_what_it_cannot_draw(ctx, params, data, message):
    with pytest.raises(NodeError, match="Visualize") as caught:
        run(ctx, "Visualize", params, data=data)
    assert message in str(caught.value)


def test_visualize_bounds_its_work_before_drawing(ctx, monkeypatch):
    with pytest.raises(NodeError, match="100,001 values is more than the 100,000"):
        run(ctx, "Visualize", data=torch.zeros(100_001))
    monkeypatch.setattr(plots, "MAX_HEATMAP_CELLS", 100)
    with pytest.raises(NodeError, match="11 × 10 = 110 cells"):
        run(ctx, "Visualize", {"plot_type": "heatmap"}, data=torch.zeros(11, 10))
    monkeypatch.setattr(plots, "MAX_IMAGE_PIXELS", 100)
    with pytest.raises(NodeError, match="11 × 10 pixels"):
        run(ctx, "Visualize", {"plot_type": "image"}, data=torch.zeros(10, 11))
    monkeypatch.setattr(plots, "MAX_HISTOGRAM_VALUES", 100)
    with pytest.raises(NodeError, match="a histogram of 101 values"):
        run(ctx, "Visualize", {"plot_type": "histogram"}, data=torch.zeros(101))
    ctx.size_limit = 10
    with pytest.raises(NodeError, match="Visualize's data would need 11 elements"):
        run(ctx, "Visualize", data=list(range(11)))


# -- ScatterPlot2D ------------------------------------------------------------------------

POINTS = torch.tensor([[0.0, 0.0], [0.2, 0.4], [0.1, 0.1], [3.0, 3.0], [3.2, 2.8], [2.9, 3.1]])
LABELS = ["a", "a", "a", "b", "b", "b"]


def test_scatter_draws_points_by_class(ctx):
    out = run(ctx, "ScatterPlot2D", {"title": "Two groups"}, points=POINTS, labels=LABELS)["image"]
    decoded(out)
    assert out.title == "Two groups: 6 points in 2 classes (a, b)"
    plain = run(ctx, "ScatterPlot2D", points=POINTS)["image"]
    decoded(plain)
    assert plain.title == "Scatter plot: 6 points"


def test_scatter_orders_number_classes_as_numbers(ctx):
    out = run(ctx, "ScatterPlot2D", points=POINTS, labels=torch.tensor([10, 2, 2, 10, 1, 1]))["image"]
    assert "(1, 2, 10)" in out.title


@pytest.mark.parametrize("points, labels, message", [
    (torch.zeros(4, 3), None, "'points' needs points of shape [N, 2]"),
    (torch.zeros(4), None, "got [4]"),
    (torch.zeros(0, 2), None, "holds no points"),
    (POINTS, ["a"], "'labels' has 1 labels for 6 points"),
    (POINTS, "abc", "needs a list of labels"),
])
def test_scatter_refuses_bad_points(ctx, points, labels, message):
    with pytest.raises(NodeError, match="ScatterPlot2D") as caught:
        run(ctx, "ScatterPlot2D", points=points, labels=labels)
    assert message in str(caught.value)


def test_scatter_bounds_points_and_classes(ctx, monkeypatch):
    monkeypatch.setattr(plots, "MAX_POINTS", 5)
    with pytest.raises(NodeError, match="6 points are more than the 5"):
        run(ctx, "ScatterPlot2D", points=POINTS)
    monkeypatch.setattr(plots, "MAX_POINTS", 100)
    many = torch.arange(50.0).reshape(25, 2)
    with pytest.raises(NodeError, match="25 classes"):
        run(ctx, "ScatterPlot2D", points=many, labels=[str(i) for i in range(25)])


# -- DecisionBoundary ---------------------------------------------------------------------

def test_boundary_of_an_edu_classifier(ctx):
    """The model output of edu:Classifier, drawn over its own training points: the picture's
    regions are what the classifier predicts there."""
    import codefyui_edu  # noqa: F401  (registers the edu pack's nodes)
    for kind in ("knn", "logistic", "linear"):
        model = run(ctx, "edu:Classifier", {"kind": kind, "n_neighbors": 1}, x_train=POINTS, y_train=LABELS,
                    x_query=POINTS)["model"]
        out = run(ctx, "DecisionBoundary", {"grid_steps": 30, "title": kind}, model=model, x_train=POINTS,
                  y_train=LABELS)["image"]
        picture = decoded(out)
        assert out.title.startswith(f"{kind}: the plane coloured") and "2 classes (a, b)" in out.title
        assert colours(picture) > 4


def test_boundary_grid_labels_match_the_models_own_predictions():
    import codefyui_edu  # noqa: F401
    from tests.graphs.conftest import FakeContext
    model = run(FakeContext(), "edu:Classifier", {"kind": "knn", "n_neighbors": 1}, x_train=POINTS, y_train=LABELS,
                x_query=POINTS)["model"]
    grid = np.array([[0.0, 0.0], [3.0, 3.0], [0.1, 0.3]])
    assert plots._grid_labels(model, grid, "DecisionBoundary") == model.predict(grid) == ["a", "b", "a"]


def test_boundary_of_a_torch_network(ctx):
    """A plain nn.Sequential: forward on the grid as float, argmax over its class scores."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 2))
    out = run(ctx, "DecisionBoundary", {"grid_steps": 20}, model=net, x_train=POINTS,
              y_train=torch.tensor([0, 0, 0, 1, 1, 1]))["image"]
    decoded(out)
    grid = np.array([[0.0, 0.0], [3.0, 3.0]])
    expected = net(torch.tensor(grid, dtype=torch.float32)).argmax(dim=1).tolist()
    assert plots._grid_labels(net, grid, "DecisionBoundary") == [str(i) for i in expected]


def test_a_network_is_asked_in_eval_mode_and_left_as_it_was(ctx):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 8), nn.Dropout(0.9), nn.Linear(8, 2))
    grid = np.random.default_rng(0).normal(size=(50, 2))
    first = plots._grid_labels(net, grid, "DecisionBoundary")
    assert net.training and plots._grid_labels(net, grid, "DecisionBoundary") == first
    net.eval()
    expected = net(torch.tensor(grid, dtype=torch.float32)).argmax(dim=1).tolist()
    assert first == [str(i) for i in expected]


def test_boundary_rings_support_vectors(ctx):
    import codefyui_edu  # noqa: F401
    model = run(ctx, "edu:AdvancedClassifier", {"kind": "SVM", "kernel": "linear"}, x_train=POINTS,
                y_train=LABELS, x_query=POINTS)["model"]
    out = run(ctx, "DecisionBoundary", {"grid_steps": 20, "show_support_vectors": True}, model=model,
              x_train=POINTS, y_train=LABELS)["image"]
    assert f"{len(model.support_vectors)} support vectors ringed" in out.title
    net = nn.Sequential(nn.Linear(2, 2))
    run(ctx, "DecisionBoundary", {"grid_steps": 20, "show_support_vectors": True}, model=net, x_train=POINTS,
        y_train=LABELS)
    assert any("no support vectors" in line for line in ctx.logs)


@pytest.mark.parametrize("model, x, y, message", [
    (nn.Linear(3, 2), torch.zeros(4, 3), ["a"] * 4, "must use exactly 2 features, but 'x_train' has 3"),
    (nn.Linear(2, 2), POINTS, ["a"], "'y_train' has 1 labels for 6 points"),
    ("not a model", POINTS, LABELS, "'model' is a str, which cannot classify points"),
    (None, POINTS, LABELS, "'model' received nothing"),
    (nn.Linear(3, 2), POINTS, LABELS, "could not label the plane's points"),
    (nn.Flatten(0), POINTS, LABELS, "it must give one row of class scores per point"),
])
def test_boundary_refuses_bad_input(ctx, model, x, y, message):
    with pytest.raises(NodeError, match="DecisionBoundary") as caught:
        run(ctx, "DecisionBoundary", {"grid_steps": 20}, model=model, x_train=x, y_train=y)
    assert message in str(caught.value)


def test_boundary_bounds_its_grid_before_asking_the_model(ctx):
    asked = []

    class Counting:
        def predict(self, grid):
            asked.append(len(grid))
            return ["a"] * len(grid)

    ctx.size_limit = 20 * 20 * 2 - 1
    with pytest.raises(NodeError, match="grid of 20 × 20 points would need 800 elements"):
        run(ctx, "DecisionBoundary", {"grid_steps": 20}, model=Counting(), x_train=POINTS, y_train=LABELS)
    assert asked == []
    ctx.size_limit = 10**8
    run(ctx, "DecisionBoundary", {"grid_steps": 25}, model=Counting(), x_train=POINTS, y_train=LABELS)
    assert asked == [625]
    _, problems = registry()["DecisionBoundary"].coerce_params({"grid_steps": 501})
    assert problems


def test_boundary_stops_when_the_run_is_stopped(ctx):
    ctx.stop_after = 0
    with pytest.raises(NodeError, match="stopped"):
        run(ctx, "DecisionBoundary", {"grid_steps": 20}, model=nn.Linear(2, 2), x_train=POINTS, y_train=LABELS)
