"""The Deep learning pack's nodes against direct computations, and their step traces."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from apps.graphs.nodes.base import NodeError, registry

from .conftest import randn, run, step, steps


def keep_layers(ctx) -> list:
    built = []
    ctx.module = lambda build: built.append(build()) or built[-1]
    return built


def plain(out: dict) -> dict:
    """Outputs without their autograd history, for numpy."""
    return {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in out.items()}


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reference_attention(layers, queries, context, heads, blocked=None, temperature=1.0):
    """Textbook multi-head attention in numpy with the node's own matrices ([seq, D] inputs)."""
    w = {name: getattr(layers, name).weight.detach().double().numpy()
         for name in ("W_q", "W_k", "W_v", "W_o") if hasattr(layers, name)}
    q, c = queries.double().numpy(), context.double().numpy()
    Q, K, V = q @ w["W_q"].T, c @ w["W_k"].T, c @ w["W_v"].T
    size = Q.shape[1] // heads
    weights, joined = [], []
    for h in range(heads):
        part = slice(h * size, (h + 1) * size)
        scores = Q[:, part] @ K[:, part].T / math.sqrt(size)
        if blocked is not None:
            scores = np.where(blocked, -np.inf, scores)
        a = softmax(scores / temperature)
        weights.append(a)
        joined.append(a @ V[:, part])
    out = np.concatenate(joined, axis=1)
    return (out @ w["W_o"].T if "W_o" in w else out), np.stack(weights)


CAUSAL = np.triu(np.ones((5, 5), dtype=bool), k=1)


# -- Edu-SelfAttention ---------------------------------------------------------------------

@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_matches_the_formula(ctx, causal):
    x = randn(5, 8, seed=1)
    layers = keep_layers(ctx)
    out = plain(run(ctx, "deep:Edu-SelfAttention", {"causal": causal, "temperature": 0.5}, tensor=x,
              labels=["a", "b"]))
    expected, weights = reference_attention(layers[0], x, x, 1, CAUSAL if causal else None, 0.5)
    assert np.allclose(out["output"], expected, atol=1e-5)
    assert np.allclose(out["weights"], weights[0], atol=1e-6)
    assert out["labels"] == ["a", "b"]


def test_self_attention_weights_are_drawn_as_codefyui_draws_them(ctx):
    layers = keep_layers(ctx)
    run(ctx, "deep:Edu-SelfAttention", {"seed": 3}, tensor=randn(2, 8))
    generator = torch.Generator().manual_seed(3)
    for name in ("W_q", "W_k", "W_v"):
        expected = torch.randn(8, 8, generator=generator) * (1 / math.sqrt(8))
        assert torch.equal(getattr(layers[0], name).weight, expected), name


def test_self_attention_steps_without_a_mask(verbose):
    run(verbose, "deep:Edu-SelfAttention", tensor=randn(5, 8))
    assert steps(verbose) == [
        ("input", ["tensor"], []), ("compute_qkv", ["K", "Q", "V"], []),
        ("scaled_scores", ["scores"], ["d", "sqrt_d"]), ("softmax_weights", ["weights"], []),
        ("weighted_sum", ["output"], []),
    ]
    assert step(verbose, "scaled_scores")["scalars"] == {"d": 8.0, "sqrt_d": math.sqrt(8)}


def test_masked_scores_hold_minus_infinity_and_the_mask_step_is_boolean(verbose):
    explicit = torch.zeros(5, 5, dtype=torch.bool)
    explicit[:, 0] = True  # nobody may look at the first token
    out = run(verbose, "deep:Edu-SelfAttention", {"causal": True}, tensor=randn(5, 8),
              mask=explicit)
    names = [s["name"] for s in verbose.steps]
    assert names == ["input", "compute_qkv", "scaled_scores", "mask", "softmax_weights",
                     "weighted_sum"]
    mask = step(verbose, "mask")["tensors"]["mask"]
    assert mask.dtype == torch.bool and torch.equal(mask, explicit | torch.from_numpy(CAUSAL))
    scores = step(verbose, "scaled_scores")["tensors"]["scores"]
    assert torch.isneginf(scores[mask]).all() and torch.isfinite(scores[~mask]).all()
    # the first token may look at nothing: its row gets weight 0, not NaN
    assert out["weights"][0].tolist() == [0.0] * 5
    assert torch.allclose(out["weights"][1:].sum(dim=1), torch.ones(4))


def test_self_attention_with_a_batch_keeps_the_layout(verbose):
    x = randn(5, 2, 8)
    out = run(verbose, "deep:Edu-SelfAttention", tensor=x)
    assert out["output"].shape == (5, 2, 8) and out["weights"].shape == (2, 5, 5)
    assert step(verbose, "compute_qkv")["tensors"]["Q"].shape == (2, 5, 8)


def test_self_attention_refuses_a_wrong_mask_and_width(ctx):
    with pytest.raises(NodeError, match=r"'mask' has shape \[3, 3\], but this input needs \[5, 5\]"):
        run(ctx, "deep:Edu-SelfAttention", tensor=randn(5, 8), mask=torch.ones(3, 3))
    with pytest.raises(NodeError, match="set embed_dim to 4"):
        run(ctx, "deep:Edu-SelfAttention", tensor=randn(5, 4))


# -- Edu-MultiHeadAttention ----------------------------------------------------------------

@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention_matches_the_formula(ctx, causal):
    x = randn(5, 8, seed=2)
    layers = keep_layers(ctx)
    out = plain(run(ctx, "deep:Edu-MultiHeadAttention", {"causal": causal}, tensor=x))
    expected, weights = reference_attention(layers[0], x, x, 2, CAUSAL if causal else None)
    assert np.allclose(out["output"], expected, atol=1e-5)
    assert np.allclose(out["weights"], weights, atol=1e-6)


def test_multi_head_attention_steps(verbose):
    run(verbose, "deep:Edu-MultiHeadAttention", tensor=randn(6, 8))
    assert steps(verbose) == [
        ("input", ["tensor"], []), ("compute_qkv", ["K", "Q", "V"], []),
        ("scaled_scores", ["scores"], ["head_dim", "sqrt_dh"]),
        ("softmax_weights", ["weights"], []), ("concat_and_project", ["output"], []),
    ]
    assert step(verbose, "compute_qkv")["tensors"]["Q"].shape == (2, 6, 4)
    assert step(verbose, "scaled_scores")["scalars"] == {"head_dim": 4.0, "sqrt_dh": 2.0}


def test_multi_head_attention_masked_adds_the_mask_step(verbose):
    run(verbose, "deep:Edu-MultiHeadAttention", {"causal": True}, tensor=randn(5, 8))
    assert [s["name"] for s in verbose.steps][2:4] == ["scaled_scores", "mask"]
    scores = step(verbose, "scaled_scores")["tensors"]["scores"]
    assert torch.isneginf(scores[:, torch.from_numpy(CAUSAL)]).all()


def test_multi_head_attention_heads_must_divide_the_width(ctx):
    with pytest.raises(NodeError, match="'embed_dim' = 8 must be divisible by 'num_heads' = 3"):
        run(ctx, "deep:Edu-MultiHeadAttention", {"num_heads": 3}, tensor=randn(5, 8))


# -- Edu-CrossAttention --------------------------------------------------------------------

def test_cross_attention_matches_the_formula_with_a_mask(verbose):
    query, context = randn(4, 8, seed=3), randn(6, 8, seed=4)
    hidden = torch.zeros(4, 6, dtype=torch.bool)
    hidden[:, 4:] = True
    layers = keep_layers(verbose)
    out = plain(run(verbose, "deep:Edu-CrossAttention", query=query, context=context,
                    mask=hidden, q_labels=["p1"], k_labels=["w1", "w2"]))
    expected, weights = reference_attention(layers[0], query, context, 2, hidden.numpy())
    assert np.allclose(out["output"], expected, atol=1e-5)
    assert np.allclose(out["weights"], weights, atol=1e-6) and out["weights"].shape == (2, 4, 6)
    assert (out["q_labels"], out["k_labels"]) == (["p1"], ["w1", "w2"])
    assert steps(verbose) == [
        ("input", ["context", "query"], []), ("compute_qkv", ["K", "Q", "V"], []),
        ("scaled_scores", ["scores"], ["head_dim"]), ("mask", ["mask"], []),
        ("softmax_weights", ["weights"], []), ("concat_and_project", ["output"], []),
    ]


def test_cross_attention_needs_matching_layouts(ctx):
    with pytest.raises(NodeError, match="must both be 2-D or both be 3-D"):
        run(ctx, "deep:Edu-CrossAttention", query=randn(4, 8), context=randn(6, 1, 8))


# -- Edu-ResBlock ---------------------------------------------------------------------------

@pytest.mark.parametrize("channels_out,with_time", [(8, False), (4, True)])
def test_resblock_matches_its_formula(ctx, channels_out, with_time):
    x, t = randn(2, 8, 5, 5, seed=5), randn(2, 32, seed=6)
    layers = keep_layers(ctx)
    out = run(ctx, "deep:Edu-ResBlock", {"out_channels": channels_out}, tensor=x,
              time_emb=t if with_time else None)
    b = layers[0]
    h = F.conv2d(F.silu(F.group_norm(x, 4)), b.conv1.weight, padding=1)
    if with_time:
        h = h + (t @ b.time_proj.weight.T)[:, :, None, None]
    h = F.conv2d(F.silu(F.group_norm(h, 4)), b.conv2.weight, padding=1)
    skip = x if channels_out == 8 else F.conv2d(x, b.skip.weight)
    assert torch.allclose(out["tensor"], h + skip, atol=1e-5)
    assert out["tensor"].shape == (2, channels_out, 5, 5)


def test_resblock_draws_its_weights_as_codefyui_does(ctx):
    layers = keep_layers(ctx)
    run(ctx, "deep:Edu-ResBlock", {"out_channels": 4}, tensor=randn(1, 8, 3, 3))
    generator, scale = torch.Generator().manual_seed(42), 1 / math.sqrt(8)
    for layer in (layers[0].conv1, layers[0].conv2, layers[0].time_proj, layers[0].skip):
        assert torch.equal(layer.weight, torch.randn(layer.weight.shape, generator=generator) * scale)
        assert not layer.bias.any()


def test_resblock_refuses_groups_that_do_not_divide(ctx):
    with pytest.raises(NodeError, match="'groups' = 3 must divide both in_channels=8"):
        run(ctx, "deep:Edu-ResBlock", {"groups": 3}, tensor=randn(1, 8, 3, 3))


# -- Edu-Patchify ---------------------------------------------------------------------------

def test_patchify_cuts_patches_in_reading_order(verbose):
    image = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
    out = run(verbose, "deep:Edu-Patchify", {"patch_size": 4}, image=image)
    assert out["tokens"].shape == (2, 4, 48) and out["grid"].tolist() == [2, 2]
    # the second patch of the first image: rows 0-3, columns 4-7 of every channel
    assert torch.equal(out["tokens"][0, 1], image[0, :, :4, 4:].reshape(-1))
    assert steps(verbose) == [
        ("input", ["image"], ["B", "C", "H", "W", "grid_h", "grid_w", "n_patches", "patch_size"]),
        ("unfold", ["unfolded"], []), ("permute", ["permuted"], []), ("flatten", ["tokens"], []),
    ]


def test_patchify_without_flatten_keeps_each_patch_square(verbose):
    out = run(verbose, "deep:Edu-Patchify", {"patch_size": 2, "flatten": False},
              image=randn(3, 4, 6))
    assert out["tokens"].shape == (1, 6, 3, 2, 2)
    assert verbose.steps[-1]["name"] == "reshape"


def test_patchify_refuses_a_size_that_does_not_divide(ctx):
    with pytest.raises(NodeError, match="patch_size=3 does not divide"):
        run(ctx, "deep:Edu-Patchify", {"patch_size": 3}, image=randn(1, 1, 8, 8))


@pytest.mark.parametrize("type_key,raw,message", [
    ("deep:Edu-SelfAttention", {"temperature": 0}, "'temperature' value 0.0 is below minimum 0.01"),
    ("deep:Edu-MultiHeadAttention", {"num_heads": 0}, "'num_heads' value 0 is below minimum 1"),
    ("deep:Edu-ResBlock", {"time_emb_dim": -1}, "'time_emb_dim' value -1 is below minimum 0"),
    ("deep:Edu-Patchify", {"patch_size": "eight"}, "'patch_size' must be a number"),
])
def test_bad_params_are_named(type_key, raw, message):
    _, problems = registry()[type_key].coerce_params(raw)
    assert problems and problems[0].startswith(message)
