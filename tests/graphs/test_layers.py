"""Layer graphs (CodefyUI's v2 JSON) and the SequentialModel node built from them."""
from __future__ import annotations

import copy
import json
import pickle

import pytest
import torch
from torch import nn

from apps.graphs import layers
from apps.graphs.nodes.base import NodeError, ParamError, registry
from apps.graphs.nodes.library.sequential import DEFAULT_LAYERS



def run_model(ctx, spec) -> nn.Module:
    node = registry()["SequentialModel"]
    params, problems = node.coerce_params({"layers": spec if isinstance(spec, str) else layers.dumps(spec)})
    assert problems == []
    return node().run(ctx, params)["model"]


def branches(merge: str, params: dict | None = None) -> dict:
    """x -> a (Linear 4->3) and x -> b (Linear 4->3), joined by one merge."""
    spec = layers.chain_of([("a", "Linear", {"in_features": 4, "out_features": 3})])
    spec["nodes"].insert(2, {"id": "b", "type": "Linear", "params": {"in_features": 4, "out_features": 3}})
    spec["nodes"].insert(3, {"id": "m", "type": merge, **({"params": params} if params else {})})
    spec["edges"] = [
        {"id": "e1", "source": "in", "sourceHandle": "p_x", "target": "a"},
        {"id": "e2", "source": "in", "sourceHandle": "p_x", "target": "b"},
        {"id": "e3", "source": "a", "target": "m"},
        {"id": "e4", "source": "b", "target": "m"},
        {"id": "e5", "source": "m", "target": "out", "targetHandle": "p_y"},
    ]
    return spec


def refusal(spec) -> str:
    with pytest.raises(ParamError) as caught:
        layers.parse(spec)
    return str(caught.value)


# -- the model built ------------------------------------------------------------------------

def test_the_model_matches_a_hand_built_sequential(ctx):
    """Same seed, same layers in the same order: the same weights and the same outputs."""
    torch.manual_seed(3)
    model = run_model(ctx, DEFAULT_LAYERS)
    torch.manual_seed(3)
    by_hand = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
                            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
                            nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    x = torch.randn(2, 1, 28, 28)
    assert torch.equal(model(x), by_hand(x))


def test_a_seeded_run_builds_the_same_weights_every_time(ctx):
    ctx.seed = 11
    first, second = run_model(ctx, DEFAULT_LAYERS), run_model(ctx, DEFAULT_LAYERS)
    assert all(torch.equal(a, b) for a, b in zip(first.parameters(), second.parameters()))


def test_weights_are_named_by_layer_id_as_in_codefyui(ctx):
    names = list(run_model(ctx, DEFAULT_LAYERS).state_dict())
    assert names[:2] == ["layers.c1.weight", "layers.c1.bias"] and "layers.l2.weight" in names


def test_the_model_trains(ctx):
    """Gradients reach every weight, so Optimizer and TrainingLoop can train it."""
    model = run_model(ctx, layers.chain_of([("l1", "Linear", {"in_features": 4, "out_features": 2})]))
    model(torch.randn(3, 4)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())


def test_the_model_survives_the_trip_to_a_run_worker_and_a_capture(ctx):
    model = run_model(ctx, branches("Add"))
    x = torch.randn(2, 4)
    assert torch.equal(pickle.loads(pickle.dumps(model))(x), model(x))
    assert torch.equal(copy.deepcopy(model)(x), model(x))


@pytest.mark.parametrize("merge, expected", [
    ("Add", lambda a, b: a + b),
    ("Multiply", lambda a, b: a * b),
    ("Subtract", lambda a, b: a - b),
    ("Mean", lambda a, b: (a + b) / 2),
    ("Concat", lambda a, b: torch.cat([a, b], dim=1)),
    ("Stack", lambda a, b: torch.stack([a, b], dim=1)),
])
def test_merges_join_branches(ctx, merge, expected):
    model = run_model(ctx, branches(merge))
    x = torch.randn(2, 4)
    a, b = model.layers["a"](x), model.layers["b"](x)
    assert torch.allclose(model(x), expected(a, b))


def test_concat_follows_its_dim(ctx):
    model = run_model(ctx, branches("Concat", {"dim": 0}))
    assert list(model(torch.randn(2, 4)).shape) == [4, 3]


def test_a_residual_block_adds_its_input_back(ctx):
    """ResNet's shape: x -> conv -> bn -> Add(x) -> relu."""
    spec = layers.chain_of([("c", "Conv2d", {"in_channels": 2, "out_channels": 2, "kernel_size": 3, "padding": 1}),
                            ("bn", "BatchNorm2d", {"num_features": 2}), ("add", "Add", {}), ("r", "ReLU", {})])
    spec["edges"].append({"id": "skip", "source": "in", "sourceHandle": "p_x", "target": "add"})
    model = run_model(ctx, spec)
    x = torch.randn(2, 2, 5, 5)
    assert torch.allclose(model(x), torch.relu(model.layers["bn"](model.layers["c"](x)) + x))


def test_two_outputs_give_a_dict(ctx):
    spec = branches("Add")
    spec["nodes"][-1]["ports"].append({"id": "p_z", "name": "z"})
    spec["edges"].append({"id": "e6", "source": "b", "target": "out", "targetHandle": "p_z"})
    out = run_model(ctx, spec)(torch.randn(2, 4))
    assert set(out) == {"y", "z"} and list(out["z"].shape) == [2, 3]


def test_a_plain_list_of_layers_is_read_as_a_chain(ctx):
    """CodefyUI's older format: [{"type": ..., **params}, ...]."""
    old = json.dumps([{"type": "Flatten"}, {"type": "Linear", "in_features": 4, "out_features": 2}, {"type": "ReLU"}])
    model = run_model(ctx, old)
    assert list(model.layers) == ["layer1", "layer2", "layer3"]
    assert list(model(torch.randn(3, 2, 2)).shape) == [3, 2]


def test_a_param_left_out_means_pytorchs_default(ctx):
    spec = layers.chain_of([("c", "Conv2d", {"in_channels": 1, "out_channels": 1, "kernel_size": 3}),
                            ("p", "MaxPool2d", {"kernel_size": 3})])
    model = run_model(ctx, spec)
    assert list(model(torch.randn(1, 1, 11, 11)).shape) == [1, 1, 3, 3]  # padding 0; stride = kernel


# -- bad layer graphs -----------------------------------------------------------------------

def test_an_unknown_layer_type_is_named():
    spec = layers.chain_of([("bogus", "BogusLayer", {})])
    assert refusal(spec).startswith("Layer 'bogus' has an unknown type 'BogusLayer'; known: Linear,")


def test_a_bad_param_names_the_layer_and_the_param():
    spec = layers.chain_of([("l1", "Linear", {"in_features": "many", "out_features": 2})])
    assert refusal(spec) == "Layer 'l1' (Linear): 'in_features' must be a number, not 'many'"
    spec = layers.chain_of([("l1", "Linear", {"in_features": 0, "out_features": 2})])
    assert refusal(spec) == "Layer 'l1' (Linear): 'in_features' value 0 is below minimum 1"
    spec = layers.chain_of([("l1", "Linear", {"width": 3})])
    assert refusal(spec) == "Layer 'l1' (Linear) has no param 'width' (its params: in_features, out_features, bias)"


def test_a_layer_with_two_inputs_needs_a_merge():
    spec = branches("Add")
    spec["nodes"][3]["type"] = "ReLU"
    assert refusal(spec).startswith("Layer 'm' (ReLU) has 2 inputs; a layer takes exactly one")


def test_a_merge_with_too_few_inputs_is_refused():
    spec = layers.chain_of([("s", "Subtract", {})])
    assert refusal(spec) == "Layer 's' (Subtract) joins 1 input; it needs exactly 2"


def test_an_output_without_an_edge_is_refused():
    spec = layers.chain_of([("l1", "Linear", {})])
    spec["edges"].pop()
    assert refusal(spec) == "Output 'y' needs exactly one incoming edge, not 0"


def test_a_loop_is_refused():
    spec = branches("Add")
    spec["edges"][0]["source"], spec["edges"][0]["sourceHandle"] = "m", None
    assert "form a loop" in refusal(spec)


@pytest.mark.parametrize("value, message", [
    ("{not json", "'layers' is not valid JSON"),
    ('{"version": 1, "nodes": [], "edges": []}', "'layers' has version 1; only version 2"),
    ('{"version": 2, "nodes": [{"id": "in", "type": "Input", "ports": []}], "edges": []}',
     "A layer graph needs exactly one Output node, not 0"),
])
def test_a_malformed_layers_param_is_refused_before_the_run(value, message):
    _, problems = registry()["SequentialModel"].coerce_params({"layers": value})
    assert len(problems) == 1 and problems[0].startswith(message)


def test_a_layer_torch_cannot_build_is_named(ctx):
    spec = layers.chain_of([("t", "TransformerEncoder", {"d_model": 10, "nhead": 3})])
    with pytest.raises(NodeError, match=r"SequentialModel: Layer 't' \(TransformerEncoder\): "):
        run_model(ctx, spec)


def test_the_weight_limit_names_the_largest_layer(ctx):
    ctx.size_limit = 100_000
    with pytest.raises(NodeError, match="Layer 'l1' of SequentialModel would need 401,536 elements"):
        run_model(ctx, DEFAULT_LAYERS)


def test_a_shape_that_does_not_fit_names_the_layer_when_the_model_runs(ctx):
    spec = layers.chain_of([("f", "Flatten", {}), ("l1", "Linear", {"in_features": 128, "out_features": 2})])
    with pytest.raises(ValueError, match=r"Layer 'l1' \(Linear\) expects 128 features, gets 392"):
        run_model(ctx, spec)(torch.randn(2, 2, 14, 14))


# -- shapes for the Layers editor -----------------------------------------------------------

def test_shapes_after_each_layer_are_traced_without_computing():
    shapes = layers.trace_shapes(layers.parse(DEFAULT_LAYERS), [[64, 1, 28, 28]])
    assert shapes["p2"] == [64, 64, 7, 7] and shapes["f"] == [64, 3136] and shapes["l2"] == [64, 10]


def test_a_shape_that_does_not_fit_is_named_and_stops_the_trace():
    spec = layers.chain_of([("c", "Conv2d", {"in_channels": 3}), ("f", "Flatten", {})])
    shapes = layers.trace_shapes(layers.parse(spec), [[1, 1, 8, 8]])
    assert shapes == {"c": "Conv2d expects 3 channels, gets 1"}
