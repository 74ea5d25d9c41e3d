"""Attention, Mixture-of-Experts, graph IO and data-flow nodes, each against a direct computation."""
from __future__ import annotations

import pytest
import torch

from apps.graphs.nodes.base import NodeError, registry


def node(type_key):
    return registry()[type_key]()


def params(type_key, **given):
    values, problems = registry()[type_key].coerce_params(given)
    assert problems == []
    return values


def run(ctx, type_key, raw=None, **inputs):
    return node(type_key).run(ctx, params(type_key, **(raw or {})), **inputs)


def declared(type_key):
    cls = registry()[type_key]
    return ([(p.name, p.type, p.optional) for p in cls.inputs], [(p.name, p.type) for p in cls.outputs],
            {p.name: p.default for p in cls.params}, cls.category)


# -- AttentionHeatmap ---------------------------------------------------------------------

def test_attention_heatmap_has_codefyuis_ports_and_params():
    assert declared("AttentionHeatmap") == (
        [("weights", "TENSOR", False), ("labels", "LIST", True)],
        [("weights", "TENSOR"), ("labels", "LIST")],
        {"head_index": -1, "colormap": "viridis"}, "LLM")
    assert registry()["AttentionHeatmap"].params[1].options == ("viridis", "blues", "RdBu")


def test_attention_heatmap_passes_weights_through_and_picks_heads(ctx):
    w3 = torch.rand(3, 4, 4, generator=torch.Generator().manual_seed(0))
    w4 = torch.rand(2, 3, 4, 4, generator=torch.Generator().manual_seed(1))
    out = run(ctx, "AttentionHeatmap", weights=w3, labels=["a", "b", "c", "d"])
    assert out["weights"] is w3 and out["labels"] == ["a", "b", "c", "d"]
    assert torch.equal(run(ctx, "AttentionHeatmap", {"head_index": 1}, weights=w3)["weights"], w3[1])
    assert torch.equal(run(ctx, "AttentionHeatmap", {"head_index": 2}, weights=w4)["weights"], w4[:, 2])
    w2 = torch.eye(3)
    assert run(ctx, "AttentionHeatmap", {"head_index": 5}, weights=w2)["weights"] is w2
    assert run(ctx, "AttentionHeatmap", weights=w2)["labels"] == []
    assert run(ctx, "AttentionHeatmap", weights=w2, labels=torch.tensor([7, 8, 9]))["labels"] == ["7", "8", "9"]


def test_attention_heatmap_messages(ctx):
    with pytest.raises(NodeError, match=r"head_index = 3 is out of range: the weights \[3, 4, 4\] have 3 heads; "
                                        r"use 0 to 2, or -1 for all"):
        run(ctx, "AttentionHeatmap", {"head_index": 3}, weights=torch.rand(3, 4, 4))
    with pytest.raises(NodeError, match=r"have 2 heads"):
        run(ctx, "AttentionHeatmap", {"head_index": 2}, weights=torch.rand(1, 2, 4, 4))
    with pytest.raises(NodeError, match=r"but got shape \[4\] \(1-D\)"):
        run(ctx, "AttentionHeatmap", weights=torch.rand(4))
    with pytest.raises(NodeError, match="needs a list of tokens"):
        run(ctx, "AttentionHeatmap", weights=torch.rand(2, 2), labels="ab")
    _, problems = registry()["AttentionHeatmap"].coerce_params({"head_index": -2, "colormap": "jet"})
    assert problems == ["'head_index' value -2 is below minimum -1",
                        "'colormap' must be one of viridis, blues, RdBu, not 'jet'"]


# -- AttentionMask -------------------------------------------------------------------------

def test_attention_mask_has_codefyuis_ports_and_params():
    assert declared("AttentionMask") == (
        [("tensor", "TENSOR", True), ("tokens", "LIST", True)], [("mask", "TENSOR")],
        {"mode": "causal", "pad_token": "<pad>"}, "LLM")


def test_attention_mask_causal_is_the_strict_upper_triangle(ctx):
    mask = run(ctx, "AttentionMask", tensor=torch.zeros(4, 8))["mask"]
    assert mask.dtype == torch.bool
    assert torch.equal(mask, torch.triu(torch.ones(4, 4), diagonal=1).bool())
    # tokens win over the tensor for the length
    assert run(ctx, "AttentionMask", tensor=torch.zeros(4, 8), tokens=["a", "b"])["mask"].shape == (2, 2)
    # and blocked scores give what scaled dot-product attention's own causal mask gives
    q = torch.randn(1, 4, 8, generator=torch.Generator().manual_seed(2))
    mine = torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=~mask)
    theirs = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert torch.allclose(mine, theirs, atol=1e-6)


def test_attention_mask_padding_blocks_the_pad_columns(ctx):
    tokens = ["the", "cat", "<pad>", "<pad>"]
    mask = run(ctx, "AttentionMask", {"mode": "padding"}, tokens=tokens)["mask"]
    expected = torch.tensor([[False, False, True, True]] * 4)
    assert torch.equal(mask, expected)
    assert not run(ctx, "AttentionMask", {"mode": "padding", "pad_token": "[PAD]"}, tokens=tokens)["mask"].any()


def test_attention_mask_messages_and_bounds(ctx):
    with pytest.raises(NodeError, match="needs a 'tensor' or a 'tokens' input"):
        run(ctx, "AttentionMask")
    with pytest.raises(NodeError, match="padding mode needs the 'tokens' input"):
        run(ctx, "AttentionMask", {"mode": "padding"}, tensor=torch.zeros(3))
    with pytest.raises(NodeError, match="sequence is empty"):
        run(ctx, "AttentionMask", tokens=[])
    with pytest.raises(NodeError, match="single number"):
        run(ctx, "AttentionMask", tensor=torch.tensor(3.0))
    ctx.size_limit = 99
    with pytest.raises(NodeError, match="AttentionMask mask would need 100 elements"):
        run(ctx, "AttentionMask", tokens=["x"] * 10)


# -- MoELayer --------------------------------------------------------------------------------

def test_moe_layer_has_codefyuis_ports_and_params():
    assert declared("MoELayer") == (
        [("x", "TENSOR", False)], [("output", "TENSOR"), ("routing_weights", "TENSOR"), ("expert_indices", "TENSOR")],
        {"num_experts": 4, "top_k": 2, "hidden_dim": 128, "expert_hidden_dim": 256, "seed": 42}, "Transformer")
    assert registry()["MoELayer"].stateful


def test_moe_layer_routes_each_token_to_its_top_k_experts(ctx):
    raw = {"num_experts": 3, "top_k": 2, "hidden_dim": 4, "expert_hidden_dim": 5, "seed": 7}
    x = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(3))
    out = run(ctx, "MoELayer", raw, x=x)
    assert out["output"].shape == (2, 3, 4)
    assert out["routing_weights"].shape == out["expert_indices"].shape == (2, 3, 2)
    # the weights are what torch.manual_seed(seed) then gate, expert 0, 1, 2 gives (CodefyUI's order)
    from apps.graphs.nodes.library.moe import MixtureOfExperts
    torch.manual_seed(7)
    layer = MixtureOfExperts(3, 2, 4, 5)
    with torch.no_grad():
        for b in range(2):
            for t in range(3):
                token = x[b, t]
                scores = layer.gate(token)
                top, idx = scores.topk(2)
                w = top.softmax(-1)
                expected = sum(w[j] * layer.experts[int(idx[j])].fc2(
                    torch.nn.functional.silu(layer.experts[int(idx[j])].fc1(token))) for j in range(2))
                assert torch.allclose(out["output"][b, t], expected, atol=1e-5)
                assert torch.equal(out["expert_indices"][b, t], idx)
                assert torch.allclose(out["routing_weights"][b, t], w, atol=1e-6)
    assert torch.allclose(out["routing_weights"].sum(-1), torch.ones(2, 3))


def test_moe_layer_reads_2d_as_a_batch_of_one_and_is_seeded(ctx):
    raw = {"num_experts": 2, "top_k": 1, "hidden_dim": 4, "expert_hidden_dim": 3}
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(4))
    first, again = run(ctx, "MoELayer", raw, x=x), run(ctx, "MoELayer", raw, x=x)
    assert first["output"].shape == (1, 5, 4) and first["expert_indices"].shape == (1, 5, 1)
    assert torch.equal(first["output"], again["output"])
    assert torch.all(first["routing_weights"] == 1.0)
    other = run(ctx, "MoELayer", {**raw, "seed": 1}, x=x)
    assert not torch.equal(first["output"], other["output"])


def test_moe_layer_messages_and_bounds(ctx):
    with pytest.raises(NodeError, match="top_k = 3 is more than num_experts = 2"):
        run(ctx, "MoELayer", {"num_experts": 2, "top_k": 3, "hidden_dim": 4}, x=torch.zeros(1, 2, 4))
    with pytest.raises(NodeError, match=r"last size hidden_dim=128, but has shape \[1, 2, 4\]; set hidden_dim to 4"):
        run(ctx, "MoELayer", x=torch.zeros(1, 2, 4))
    with pytest.raises(NodeError, match=r"got shape \[4\] \(1-D\)"):
        run(ctx, "MoELayer", {"hidden_dim": 4}, x=torch.zeros(4))
    ctx.size_limit = 1000
    with pytest.raises(NodeError, match="MoELayer weights would need"):
        run(ctx, "MoELayer", x=torch.zeros(1, 2, 128))
    _, problems = registry()["MoELayer"].coerce_params({"num_experts": 10_000})
    assert problems == ["'num_experts' value 10000 is above maximum 256"]


# -- Reduce ----------------------------------------------------------------------------------

def test_reduce_has_codefyuis_ports_and_params():
    assert declared("Reduce") == ([("items", "LIST", False)], [("result", "ANY"), ("count", "SCALAR")],
                                  {"operation": "mean", "dim": 0}, "Data Flow")


@pytest.mark.parametrize("op, expected", [
    ("sum", lambda s: s.sum(0)), ("mean", lambda s: s.mean(0)), ("min", lambda s: s.min(0).values),
    ("max", lambda s: s.max(0).values), ("stack", lambda s: s), ("concat", lambda s: s.reshape(6, 4)),
    ("first", lambda s: s[0]), ("last", lambda s: s[-1]),
])
def test_reduce_matches_torch(ctx, op, expected):
    items = [torch.randn(2, 4, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    out = run(ctx, "Reduce", {"operation": op}, items=items)
    assert torch.allclose(out["result"], expected(torch.stack(items))) and out["count"] == 3.0


def test_reduce_numbers_dims_and_messages(ctx):
    assert run(ctx, "Reduce", items=[1, 2, 6])["result"].item() == 3.0
    assert run(ctx, "Reduce", {"operation": "first"}, items=["a", {"b": 1}])["result"] == "a"
    items = [torch.zeros(2, 3), torch.ones(2, 3)]
    assert run(ctx, "Reduce", {"operation": "concat", "dim": 1}, items=items)["result"].shape == (2, 6)
    assert run(ctx, "Reduce", {"operation": "stack", "dim": 2}, items=items)["result"].shape == (2, 3, 2)
    with pytest.raises(NodeError, match="Reduce received an empty list; 'mean' needs at least one item"):
        run(ctx, "Reduce", items=[])
    with pytest.raises(NodeError, match="item 1 is a 'str'"):
        run(ctx, "Reduce", {"operation": "sum"}, items=[torch.zeros(1), "x"])
    with pytest.raises(NodeError, match=r"same shape, but got \[2\], \[3\]"):
        run(ctx, "Reduce", items=[torch.zeros(2), torch.zeros(3)])
    with pytest.raises(NodeError, match="'dim' = 5 is out of range"):
        run(ctx, "Reduce", {"operation": "concat", "dim": 5}, items=items)
    with pytest.raises(NodeError, match="needs a list"):
        run(ctx, "Reduce", items="abc")


# -- Switch ----------------------------------------------------------------------------------

def test_switch_picks_the_selected_input(ctx):
    assert declared("Switch")[0] == [("selector", "SCALAR", False), ("input_0", "ANY", False),
                                     ("input_1", "ANY", True), ("input_2", "ANY", True), ("input_3", "ANY", True)]
    a, b = torch.zeros(2), "second"
    assert run(ctx, "Switch", selector=0, input_0=a, input_1=b)["output"] is a
    assert run(ctx, "Switch", selector=torch.tensor(1.0), input_0=a, input_1=b)["output"] == "second"
    with pytest.raises(NodeError, match="selector = 4 is out of range; use 0 to 3"):
        run(ctx, "Switch", selector=4, input_0=a)
    with pytest.raises(NodeError, match="selector = 2 picks input_2, but nothing is wired into it"):
        run(ctx, "Switch", selector=2, input_0=a, input_1=b)
    with pytest.raises(NodeError, match="whole number from 0 to 3, not 1.5"):
        run(ctx, "Switch", selector=1.5, input_0=a)


# -- Map -------------------------------------------------------------------------------------

CNN = "Simple CNN Classifier"


def test_map_runs_a_preset_on_every_item(ctx):
    images = [torch.rand(1, 1, 8, 8, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    ctx.seed = 5
    out = run(ctx, "Map", {"subgraph": CNN}, items=images)
    assert out["count"] == 3.0 and [r.shape for r in out["results"]] == [(1, 64, 2, 2)] * 3
    assert ctx.reports[-1] == {"item": 3, "items": 3}
    assert ctx.steps == [] and ctx.captures == {}


def test_map_gives_what_the_presets_nodes_give_one_by_one(ctx):
    ctx.seed = 5
    item = torch.rand(1, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    mapped = run(ctx, "Map", {"subgraph": CNN}, items=[item])["results"][0]
    value = item
    for type_key, raw in [("Conv2d", {"in_channels": 1, "out_channels": 32, "kernel_size": 3, "stride": 1, "padding": 1}),
                          ("Activation", {"function": "relu"}), ("MaxPool2d", {"kernel_size": 2, "stride": 2}),
                          ("Conv2d", {"in_channels": 32, "out_channels": 64, "kernel_size": 3, "stride": 1, "padding": 1}),
                          ("Activation", {"function": "relu"}), ("MaxPool2d", {"kernel_size": 2, "stride": 2})]:
        value = run(ctx, type_key, raw, tensor=value)["tensor"]
    assert torch.allclose(mapped, value)


def test_map_messages_and_bounds(ctx):
    with pytest.raises(NodeError, match="Map needs a preset: set 'subgraph'"):
        run(ctx, "Map", items=[1])
    with pytest.raises(NodeError, match="there is no preset named 'Nope'; use one of"):
        run(ctx, "Map", {"subgraph": "Nope"}, items=[1])
    with pytest.raises(NodeError, match="Map: item 0: "):
        run(ctx, "Map", {"subgraph": CNN}, items=[torch.zeros(1, 3, 8, 8)])
    with pytest.raises(NodeError, match="Map received 1001 items; it runs at most 1000"):
        run(ctx, "Map", {"subgraph": CNN}, items=[0] * 1001)
    ctx.stop_after, ctx._asked = 1, 0
    with pytest.raises(NodeError, match="Map stopped after 1 of 3 items"):
        run(ctx, "Map", {"subgraph": CNN}, items=[torch.zeros(1, 1, 4, 4)] * 3)


# -- GraphInput / GraphOutput -------------------------------------------------------------------

def test_graph_io_have_codefyuis_ports_and_params():
    assert declared("GraphInput") == ([], [("value", "ANY")], {"name": "input", "type": "string", "required": True,
                                                              "default": "", "description": ""}, "IO")
    assert declared("GraphOutput") == ([("value", "ANY", False)], [], {"name": "output", "description": ""}, "IO")


@pytest.mark.parametrize("kind, text, value", [
    ("string", " hi ", " hi "), ("number", "0.5", 0.5), ("integer", "3", 3), ("integer", "3.0", 3),
    ("boolean", "True", True), ("boolean", "off", False), ("json", '{"k": [1, 2]}', {"k": [1, 2]}),
])
def test_graph_input_coerces_its_default(ctx, kind, text, value):
    out = run(ctx, "GraphInput", {"type": kind, "default": text})["value"]
    assert out == value and type(out) is type(value)


def test_graph_input_messages(ctx):
    with pytest.raises(NodeError, match="GraphInput 'input' is required but its 'default' is empty"):
        run(ctx, "GraphInput")
    assert run(ctx, "GraphInput", {"required": False, "type": "number", "default": " "})["value"] is None
    with pytest.raises(NodeError, match="'default' is not valid JSON"):
        run(ctx, "GraphInput", {"type": "json", "default": "{oops"})
    with pytest.raises(NodeError, match="not valid JSON"):
        run(ctx, "GraphInput", {"type": "json", "default": "NaN"})
    with pytest.raises(NodeError, match="'2.5' is not a whole number"):
        run(ctx, "GraphInput", {"type": "integer", "default": "2.5"})
    with pytest.raises(NodeError, match="'x' is not a number"):
        run(ctx, "GraphInput", {"type": "number", "default": "x"})
    with pytest.raises(NodeError, match="'maybe' is not true or false"):
        run(ctx, "GraphInput", {"type": "boolean", "default": "maybe"})


def test_graph_input_image_comes_from_my_files(ctx, tmp_path):
    from PIL import Image

    from apps.graphs.nodes.library._images import PngImage, as_pil
    from apps.runs.engine.files import UserFiles
    ctx.files = UserFiles(tmp_path / "ada", max_bytes=2**20)
    buffer = __import__("io").BytesIO()
    Image.new("RGB", (6, 4), (255, 0, 0)).save(buffer, format="PNG")
    ctx.files.save("red.png", buffer.getvalue(), "default")
    out = run(ctx, "GraphInput", {"type": "image", "default": "red.png"})["value"]
    assert isinstance(out, PngImage) and (out.width, out.height) == (6, 4)
    assert as_pil(out, "value", "t").getpixel((0, 0)) == (255, 0, 0)
    with pytest.raises(NodeError, match="'blue.png': there is no such file in My files"):
        run(ctx, "GraphInput", {"type": "image", "default": "blue.png"})
    ctx.files.save("notes.png", b"not a picture", "default")
    with pytest.raises(NodeError, match="not a picture this server can read"):
        run(ctx, "GraphInput", {"type": "image", "default": "notes.png"})
    ctx.size_limit = 10
    with pytest.raises(NodeError, match="image would need 96 elements"):
        run(ctx, "GraphInput", {"type": "image", "default": "red.png"})


def test_graph_output_records_what_it_received(ctx):
    ctx.recording = True
    assert run(ctx, "GraphOutput", value=[1, 2]) == {}
    assert ctx.captures == {"value": [1, 2]}
