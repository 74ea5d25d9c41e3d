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
