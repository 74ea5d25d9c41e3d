"""The element limit holds for every node, before anything is allocated, in one place."""
from __future__ import annotations

import math

import pytest
import torch

from apps.graphs import document
from apps.graphs.nodes.base import Node, Port, register
from apps.runs.engine import RunOptions, execute, plan_run

LIMIT = 10_000  # small, so each case stays tiny: every case below asks for 40,000 or more


def graph(inputs: dict[str, str], node_type: str, params: dict) -> dict:
    """Start -> one TensorCreate (zeros of the given shape) per input port -> the node."""
    nodes = [{"id": "start", "type": "Start"},
             {"id": "node", "type": node_type, "data": {"label": "Big", "params": params}}]
    edges = [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "node"}]
    for port, shape in inputs.items():
        nodes.append({"id": port, "type": "TensorCreate", "data": {"params": {"shape": shape, "fill": "zeros"}}})
        edges.append({"id": f"e-{port}", "source": port, "sourceHandle": "tensor",
                      "target": "node", "targetHandle": port})
    return document.normalise({"nodes": nodes, "edges": edges})


def run(doc, max_elements=LIMIT, verbose=False):
    return execute(plan_run(doc), RunOptions(run_id="limits", max_elements=max_elements, verbose=verbose),
                   lambda event: None)


CASES = {
    "Add broadcast": (graph({"tensor_a": "200,1", "tensor_b": "1,200"}, "Add", {}), "[200, 200]"),
    "Multiply broadcast": (graph({"tensor_a": "200,1", "tensor_b": "1,200"}, "Multiply", {}), "[200, 200]"),
    "Conv2d padding": (graph({"tensor": "1,1,1,1"}, "Conv2d", {
        "in_channels": 1, "out_channels": 1, "kernel_size": 1, "stride": 1, "padding": 100}), "[1, 1, 201, 201]"),
    "ConvTranspose2d stride": (graph({"tensor": "1,1,2,2"}, "ConvTranspose2d", {
        "in_channels": 1, "out_channels": 1, "kernel_size": 1, "stride": 200, "padding": 0}), "[1, 1, 201, 201]"),
    "AdaptiveAvgPool2d": (graph({"tensor": "1,1,2,2"}, "AdaptiveAvgPool2d", {
        "output_height": 200, "output_width": 200}), "[1, 1, 200, 200]"),
    "Linear": (graph({"tensor": "1000,1"}, "Linear", {"in_features": 1, "out_features": 40}), "[1000, 40]"),
    "Embedding": (graph({"tensor": "400"}, "Embedding", {"num_embeddings": 10, "embedding_dim": 100}), "[400, 100]"),
    "MultiHeadAttention": (graph({"query": "200,4", "key": "200,4", "value": "200,4"}, "MultiHeadAttention", {
        "embed_dim": 4, "num_heads": 1}), "200, 200]"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_node_whose_output_is_over_the_limit_is_refused_with_its_name_shape_and_limit(case):
    """Each of the eight outputs the issue found past CODEFYUI_MAX_TENSOR_ELEMENTS is refused by name."""
    doc, shape = CASES[case]
    outcome = run(doc)
    assert outcome.status == "failed"
    error = outcome.nodes["node"].error
    assert error.startswith("Big would need a tensor of shape ")
    assert shape in error
    assert "more than the 10,000 this server allows (CODEFYUI_MAX_TENSOR_ELEMENTS)" in error


@pytest.mark.parametrize("case", CASES)
def test_the_same_nodes_run_under_a_limit_they_fit(case):
    """The guard refuses only what is too large: with room enough, each case runs."""
    doc, _ = CASES[case]
    assert run(doc, max_elements=100_000).status == "succeeded"


@register
class _Grow(Node):
    """Test node written without any size check, as a plugin author might."""
    type = "test:Grow"
    category = "Utility"
    inputs = (Port("tensor"),)
    outputs = (Port("tensor"),)

    def run(self, ctx, params, tensor):
        big = torch.ones(300, 300)      # an intermediate the node never returns
        return {"tensor": tensor + big.sum()}


@register
class _Select(Node):
    """Test node whose result size depends on the data (masked_select cannot run on meta)."""
    type = "test:Select"
    category = "Utility"
    inputs = (Port("tensor"),)
    outputs = (Port("tensor"),)

    def run(self, ctx, params, tensor):
        return {"tensor": torch.masked_select(tensor, torch.ones(1, 200, dtype=torch.bool))}


def test_tensor_create_is_refused_before_allocating():
    """40 GB of ones would take the server down if allocated: it is refused first, at the default limit."""
    doc = graph({}, "TensorCreate", {"shape": "100000,100000", "fill": "ones"})
    outcome = run(doc, max_elements=100_000_000)
    assert ("Big would need a tensor of shape [100000, 100000] (10,000,000,000 elements), more than the "
            "100,000,000 this server allows (CODEFYUI_MAX_TENSOR_ELEMENTS)") in outcome.nodes["node"].error


def test_a_node_added_later_is_covered_intermediates_included():
    """A node that never calls a check is held to the limit, even for a tensor it only uses inside."""
    outcome = run(graph({"tensor": "2"}, "test:Grow", {}))
    assert "would need a tensor of shape [300, 300] (90,000 elements)" in outcome.nodes["node"].error


def test_a_data_dependent_result_is_checked_right_after_it_is_made():
    """An op that cannot run on meta still cannot hand on a result over the limit."""
    outcome = run(graph({"tensor": "200,1"}, "test:Select", {}))
    assert "would need a tensor of shape [40000]" in outcome.nodes["node"].error
    assert run(graph({"tensor": "20,1"}, "test:Select", {})).status == "succeeded"


def test_a_limit_refusal_does_not_stay_in_force_after_the_node():
    """The guard covers only the node it wraps: the engine's own work afterwards is not refused."""
    run(graph({"tensor": "2"}, "test:Grow", {}))
    assert torch.ones(300, 300).numel() == 90_000


@register
class _Told(Node):
    """Test node that tells its largest tensor beforehand (two of its input, stacked) and
    records whether it ran under the per-op guard."""
    type = "test:Told"
    category = "Utility"
    inputs = (Port("tensor"),)
    outputs = (Port("tensor"),)
    guarded: list[bool] = []

    @classmethod
    def largest_shape(cls, params, inputs):
        return (2, *inputs["tensor"].shape)

    def run(self, ctx, params, tensor):
        from torch.utils import _python_dispatch
        _Told.guarded.append(_python_dispatch._get_current_dispatch_mode() is not None)
        return {"tensor": torch.stack([tensor, tensor])}


def test_a_node_that_tells_its_largest_tensor_is_checked_once_and_runs_unguarded():
    """Node.largest_shape: that shape is checked before the node runs (the same message), and
    its operations are not each guarded; a node that does not tell is guarded per op."""
    _Told.guarded.clear()
    assert run(graph({"tensor": "50,50"}, "test:Told", {})).status == "succeeded"
    assert _Told.guarded == [False]
    outcome = run(graph({"tensor": "100,100"}, "test:Told", {}))
    assert ("Big would need a tensor of shape [2, 100, 100] (20,000 elements), more than the 10,000 this "
            "server allows (CODEFYUI_MAX_TENSOR_ELEMENTS)") in outcome.nodes["node"].error
    assert _Told.guarded == [False]        # refused before it ran


@pytest.mark.parametrize("node_type, params, inputs", [
    ("Linear", {"in_features": 30, "out_features": 7}, "64,30"),
    ("Linear", {"in_features": 30, "out_features": 90}, "2,64,30"),
    *[("Activation", {"function": f}, "3,40") for f in ("relu", "softmax", "prelu", "gelu")],
    ("Softmax", {"dim": -1}, "3,40"),
    ("Softmax", {"dim": 0}, "2,64,30"),
    ("Flatten", {"start_dim": 1}, "2,3,4,5"),
    ("Flatten", {"start_dim": 0}, "3,40"),
    ("Conv2d", {"in_channels": 2, "out_channels": 7, "kernel_size": 3, "stride": 1, "padding": 1}, "1,2,9,9"),
    ("Conv2d", {"in_channels": 3, "out_channels": 1, "kernel_size": 3, "stride": 2, "padding": 0}, "2,3,9,9"),
    ("Conv2d", {"in_channels": 1, "out_channels": 4, "kernel_size": 1, "stride": 1, "padding": 5}, "1,3,3"),
    ("MaxPool2d", {"kernel_size": 2, "stride": 2}, "1,4,8,8"),
    ("MaxPool2d", {"kernel_size": 3, "stride": 1}, "2,3,5"),
    ("AvgPool2d", {"kernel_size": 2, "stride": 1, "padding": 1}, "1,2,4,4"),
])
@pytest.mark.parametrize("verbose", [False, True])
def test_what_a_node_tells_bounds_every_tensor_it_makes(node_type, params, inputs, verbose, monkeypatch):
    """The nodes that tell their largest tensor make nothing larger, Verbose internals' steps
    included: every op of a run of theirs under the per-op guard set to exactly that many
    elements passes."""
    doc = graph({"tensor": inputs}, node_type, params)
    node = plan_run(doc).nodes["node"]
    told = node.cls.largest_shape(node.params, {"tensor": torch.zeros(*map(int, inputs.split(",")))})
    assert told is not None
    # run it as a node that does not tell: every op guarded at exactly the told size
    monkeypatch.setattr(node.cls, "largest_shape", classmethod(lambda cls, params, inputs: None))
    outcome = run(doc, max_elements=math.prod(told), verbose=verbose)
    assert outcome.nodes["node"].status == "completed", outcome.nodes["node"].error


@pytest.mark.parametrize("node_type, params, inputs, problem", [
    ("AvgPool2d", {"kernel_size": 2, "stride": 1, "padding": 100000}, "1,1,4,4",
     "'padding' = 100000 must be at most half of kernel_size=2"),
    ("Conv2d", {"in_channels": 3, "out_channels": 8, "kernel_size": 3, "stride": 1, "padding": 100000}, "1,1,4,4",
     "Channel mismatch: expected 3 channels, got 1 (input shape [1, 1, 4, 4]); set in_channels to 1"),
])
def test_a_node_that_tells_leaves_wrong_params_to_its_own_message(node_type, params, inputs, problem):
    """A student who types 100000 into a pool's padding, or wires the wrong channels into a
    Conv2d, reads what is wrong, not only that the result would be too large."""
    outcome = run(graph({"tensor": inputs}, node_type, params))
    assert problem in outcome.nodes["node"].error


@pytest.mark.parametrize("node_type, params", [
    *[("TensorInput", {"shape": "3,40", "value_mode": mode, "dtype": dtype})
      for mode in ("random", "zeros", "ones", "arange") for dtype in ("float32", "int64", "bool")],
    ("TensorInput", {"shape": "2,3", "value_mode": "explicit", "values": [[1, 2, 3], [4, 5, 6]]}),
    *[("TensorCreate", {"shape": "3,40", "fill": fill}) for fill in ("zeros", "ones", "randn", "rand", "full", "arange")],
])
def test_a_node_that_makes_its_shape_param_tells_it_and_makes_nothing_larger(node_type, params, monkeypatch):
    """TensorInput and TensorCreate tell the shape they make, in every mode, and no op of theirs
    under the per-op guard set to exactly that many elements is refused; a malformed shape
    tells nothing, so the node itself says what is wrong."""
    doc = graph({}, node_type, params)
    node = plan_run(doc).nodes["node"]
    told = node.cls.largest_shape(node.params, {})
    assert told == tuple(int(s) for s in params["shape"].split(","))
    assert node.cls.largest_shape({**node.params, "shape": "3,x"}, {}) is None
    monkeypatch.setattr(node.cls, "largest_shape", classmethod(lambda cls, params, inputs: None))
    outcome = run(doc, max_elements=math.prod(told))
    assert outcome.nodes["node"].status == "completed", outcome.nodes["node"].error


def test_a_tensor_input_over_the_limit_is_refused_before_it_is_made():
    """TensorInput's shape is checked against the limit before anything is drawn, with the usual message."""
    outcome = run(graph({}, "TensorInput", {"shape": "100000,100000", "value_mode": "random"}), max_elements=100_000_000)
    assert ("Big would need a tensor of shape [100000, 100000] (10,000,000,000 elements), more than the "
            "100,000,000 this server allows (CODEFYUI_MAX_TENSOR_ELEMENTS)") in outcome.nodes["node"].error
