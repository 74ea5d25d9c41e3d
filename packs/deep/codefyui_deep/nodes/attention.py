"""Attention written out by hand: single-head self-attention, multi-head self-attention and
cross-attention, each tracing its projections, scores, mask and weights step by step."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from apps.graphs.nodes.base import NodeError, Param, Port
from apps.graphs.nodes.library._helpers import (LibraryNode, as_float, build_layer, normal_init,
                                                shape_str, step)

LAYOUT = "[seq, embed_dim] (or [seq, batch, embed_dim])"


class Projections(nn.Module):
    """The learned matrices W_q, W_k, W_v (and W_o), without biases, drawn from ``seed``."""

    def __init__(self, embed_dim: int, seed: int, output: bool):
        super().__init__()
        names = ("W_q", "W_k", "W_v") + (("W_o",) if output else ())
        for name in names:
            setattr(self, name, nn.Linear(embed_dim, embed_dim, bias=False))
        normal_init(seed, (getattr(self, name) for name in names))


def projections(ctx, params, output: bool, node: str) -> Projections:
    width = params["embed_dim"]
    count = 4 if output else 3
    return build_layer(ctx, count * width * width, f"{node} weights",
                       lambda: Projections(width, params["seed"], output))


def batch_first(x: torch.Tensor, width: int, port: str, node: str) -> torch.Tensor:
    """[seq, D] -> [1, seq, D]; [seq, batch, D] -> [batch, seq, D]."""
    if x.dim() not in (2, 3):
        raise NodeError(f"{node} expects '{port}' as {LAYOUT}, but got shape {shape_str(x.shape)}")
    if x.shape[-1] != width:
        raise NodeError(f"Size mismatch: {node} expects '{port}' to have last size "
                        f"embed_dim={width}, but it has shape {shape_str(x.shape)}; set embed_dim "
                        f"to {x.shape[-1]}")
    x = as_float(x)
    return x.unsqueeze(0) if x.dim() == 2 else x.transpose(0, 1)


def heads_divide(params, node: str) -> int:
    width, heads = params["embed_dim"], params["num_heads"]
    if width % heads:
        raise NodeError(f"{node}: 'embed_dim' = {width} must be divisible by 'num_heads' = "
                        f"{heads}, because each head gets an equal share of it")
    return width // heads


def blocked(rows: int, cols: int, causal: bool, mask, node: str) -> torch.Tensor | None:
    """Which (query, key) pairs may not attend (True = blocked): the causal triangle, the wired
    mask, or both together; None when nothing is blocked."""
    if mask is not None:
        if tuple(mask.shape) != (rows, cols):
            raise NodeError(f"{node}: 'mask' has shape {shape_str(mask.shape)}, but this input "
                            f"needs [{rows}, {cols}] (True = blocked)")
        mask = mask.bool()
    if causal:
        future = torch.ones(rows, cols, dtype=torch.bool).triu(diagonal=1)
        mask = future if mask is None else mask | future.to(mask.device)
    return mask


def attend(layers: Projections, queries, context, heads: int, mask, temperature: float = 1.0):
    """Scaled dot-product attention per head on batch-first inputs: (Q, K, V, scores with −inf
    where blocked, weights, the heads' results joined side by side)."""
    batch, rows, width = queries.shape
    cols, size = context.shape[1], width // heads

    def split(t, length):  # [batch, seq, D] -> [batch, heads, seq, D / heads]
        return t.view(batch, length, heads, size).transpose(1, 2)

    Q = split(layers.W_q(queries), rows)
    K, V = split(layers.W_k(context), cols), split(layers.W_v(context), cols)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(size)
    if mask is not None:
        scores = scores.masked_fill(mask.to(scores.device), float("-inf"))
    # a row with every key blocked has no weights to give: zeros, not NaN
    weights = torch.nan_to_num(F.softmax(scores / temperature, dim=-1), nan=0.0)
    joined = (weights @ V).transpose(1, 2).reshape(batch, rows, width)
    return Q, K, V, scores, weights, joined


def shown(t: torch.Tensor, two_d: bool, one_head: bool = False) -> torch.Tensor:
    """A per-head tensor [batch, heads, ...] in the input's own layout for the trace."""
    t = t.squeeze(1) if one_head else t
    return t.squeeze(0) if two_d else t


def back(out: torch.Tensor, two_d: bool) -> torch.Tensor:
    return out.squeeze(0) if two_d else out.transpose(0, 1)


def passed_on(labels) -> list:
    """Token names, passed through for the heatmap's axes."""
    if labels is None:
        return []
    return labels.tolist() if isinstance(labels, torch.Tensor) else list(labels)


def blocked_note(block) -> str:
    return r"; blocked pairs read $-\infty$." if block is not None else "."


class SelfAttention(LibraryNode):
    type = "deep:Edu-SelfAttention"
    category = "LLM"
    description = "Single-head self-attention written out: Q, K, V, scores, softmax, weighted sum."
    details = (
        "Each token asks a question (its query Q), offers a label (its key K) and carries "
        "content (its value V), all three made from the token by learned matrices. A token's "
        "score for another is Q·K divided by √embed_dim; softmax turns a row of scores into "
        "weights that add up to 1, and the output is the weighted sum of the values. "
        "'causal' stops a token from looking at the tokens after it (as in GPT); a wired "
        "'mask' ([seq, seq], True = blocked) blocks more pairs; blocked scores read −∞ and get "
        "weight 0. 'temperature' below 1 sharpens the weights, above 1 flattens them. Input "
        "[5, 8] gives output [5, 8] and weights [5, 5] (with a batch, [seq, batch, 8] gives "
        "[batch, 5, 5]). 'labels' (token names) pass through to label the heatmap."
    )
    inputs = (Port("tensor", description=LAYOUT), Port("mask", optional=True),
              Port("labels", "LIST", optional=True))
    outputs = (Port("output"), Port("weights"), Port("labels", "LIST"))
    params = (
        Param("embed_dim", "int", 8, "Size of each token vector", min=1),
        Param("causal", "bool", False, "Tokens cannot look at the tokens after them"),
        Param("temperature", "float", 1.0, "Scores are divided by this before softmax", min=0.01),
        Param("seed", "int", 42, "Same seed, same W_q, W_k, W_v"),
    )
    stateful = True
    records_steps = True

    def run(self, ctx, params, tensor, mask=None, labels=None):
        x = batch_first(tensor, params["embed_dim"], "tensor", "Edu-SelfAttention")
        two_d, seq, width = tensor.dim() == 2, x.shape[1], x.shape[2]
        block = blocked(seq, seq, params["causal"], mask, "Edu-SelfAttention")
        layers = projections(ctx, params, False, "Edu-SelfAttention")
        Q, K, V, scores, weights, out = attend(layers, x, x, 1, block, params["temperature"])
        output, weights = back(out, two_d), shown(weights, two_d, one_head=True)
        step(ctx, "input", f"The token vectors, shape {shape_str(tensor.shape)}.",
             tensor=as_float(tensor))
        step(ctx, "compute_qkv", "Project every token three times: "
             "$Q = xW_q$, $K = xW_k$, $V = xW_v$.",
             Q=shown(Q, two_d, True), K=shown(K, two_d, True), V=shown(V, two_d, True))
        step(ctx, "scaled_scores", r"How well each query matches each key: "
             r"$S = QK^T / \sqrt{d}$" + blocked_note(block),
             {"d": float(width), "sqrt_d": math.sqrt(width)}, scores=shown(scores, two_d, True))
        if block is not None:
            step(ctx, "mask", f"The blocked pairs (True = blocked): causal = "
                 f"{params['causal']}, mask wired = {mask is not None}.", mask=block)
        step(ctx, "softmax_weights", r"Softmax along each row: $A = \mathrm{softmax}(S / T)$ with "
             f"temperature $T = {params['temperature']:g}$; every row adds up to 1.",
             weights=weights)
        step(ctx, "weighted_sum", "Each output is the weighted sum of the values: $O = AV$.",
             output=output)
        return {"output": output, "weights": weights, "labels": passed_on(labels)}


def trace_scores(ctx, scores, two_d: bool, size: int, block, mask, causal: bool,
                 with_root: bool) -> None:
    """The per-head scores step and, when pairs are blocked, the mask step."""
    scalars = {"head_dim": float(size)}
    if with_root:
        scalars["sqrt_dh"] = math.sqrt(size)
    step(ctx, "scaled_scores", r"Per head: $S_h = Q_hK_h^T / \sqrt{d_h}$ with $d_h = "
         f"{size}$" + blocked_note(block),
         scalars, scores=shown(scores, two_d))
    if block is not None:
        step(ctx, "mask", f"The blocked pairs (True = blocked), the same in every head: causal = "
             f"{causal}, mask wired = {mask is not None}.", mask=block)


class MultiHeadAttention(LibraryNode):
    type = "deep:Edu-MultiHeadAttention"
    category = "LLM"
    description = "Multi-head self-attention written out: every head attends on its own, W_o mixes them."
    details = (
        "The token vectors are projected to Q, K and V as in single-head attention, then each "
        "is cut into 'num_heads' slices of embed_dim / num_heads numbers. Every head computes "
        "its own scores QK^T / √(head size), softmax weights and weighted sum, so different "
        "heads can follow different relations (the next word, the subject of the sentence). "
        "The heads' results are put side by side again and mixed by the matrix W_o. Input "
        "[5, 8] with 2 heads gives output [5, 8] and weights [2, 5, 5], one pattern per head. "
        "'causal' and a wired 'mask' ([seq, seq], True = blocked) block pairs in every head. "
        "embed_dim must be divisible by num_heads."
    )
    inputs = SelfAttention.inputs
    outputs = SelfAttention.outputs
    params = (
        Param("embed_dim", "int", 8, "Size of each token vector", min=1),
        Param("num_heads", "int", 2, "How many heads attend side by side", min=1),
        Param("causal", "bool", False, "Tokens cannot look at the tokens after them"),
        Param("seed", "int", 42, "Same seed, same W_q, W_k, W_v, W_o"),
    )
    stateful = True
    records_steps = True

    def run(self, ctx, params, tensor, mask=None, labels=None):
        node = "Edu-MultiHeadAttention"
        size, heads = heads_divide(params, node), params["num_heads"]
        x = batch_first(tensor, params["embed_dim"], "tensor", node)
        two_d, seq = tensor.dim() == 2, x.shape[1]
        block = blocked(seq, seq, params["causal"], mask, node)
        layers = projections(ctx, params, True, node)
        Q, K, V, scores, weights, joined = attend(layers, x, x, heads, block)
        output, weights = back(layers.W_o(joined), two_d), shown(weights, two_d)
        step(ctx, "input", f"The token vectors, shape {shape_str(tensor.shape)}: embed_dim "
             f"{params['embed_dim']} shared by {heads} heads of {size}.", tensor=as_float(tensor))
        step(ctx, "compute_qkv", f"Project Q, K and V, then cut each into {heads} heads of "
             f"{size} numbers.", Q=shown(Q, two_d), K=shown(K, two_d), V=shown(V, two_d))
        trace_scores(ctx, scores, two_d, size, block, mask, params["causal"], True)
        step(ctx, "softmax_weights", "Softmax along each row, head by head: each head's weights "
             "for a query add up to 1.", weights=weights)
        step(ctx, "concat_and_project", r"The heads' weighted sums $A_hV_h$ side by side again, "
             r"mixed by $W_o$: $O = [A_1V_1, \dots, A_HV_H]\,W_o^T$.", output=output)
        return {"output": output, "weights": weights, "labels": passed_on(labels)}


class CrossAttention(LibraryNode):
    type = "deep:Edu-CrossAttention"
    category = "Diffusion"
    description = "Multi-head cross-attention: queries from one sequence, keys and values from another."
    details = (
        "Cross-attention lets one sequence read from another: Q is made from 'query' (say, the "
        "patches of an image being drawn), K and V from 'context' (say, the words of the "
        "prompt). This is how Stable Diffusion follows a text prompt. The two may have "
        "different lengths, so the weights are rectangular: query [4, 8] and context [6, 8] "
        "with 2 heads give output [4, 8] (one row per query) and weights [2, 4, 6]. A wired "
        "'mask' [query length, context length] (True = blocked) hides some context tokens. "
        "Both inputs need last size embed_dim, which must be divisible by num_heads; "
        "'q_labels' and 'k_labels' pass through to label the heatmap's rows and columns."
    )
    inputs = (Port("query", description=LAYOUT), Port("context", description=LAYOUT),
              Port("mask", optional=True), Port("q_labels", "LIST", optional=True),
              Port("k_labels", "LIST", optional=True))
    outputs = (Port("output"), Port("weights"), Port("q_labels", "LIST"), Port("k_labels", "LIST"))
    params = (
        Param("embed_dim", "int", 8, "Size of each token vector in both inputs", min=1),
        Param("num_heads", "int", 2, "How many heads attend side by side", min=1),
        Param("seed", "int", 42, "Same seed, same W_q, W_k, W_v, W_o"),
    )
    stateful = True
    records_steps = True

    def run(self, ctx, params, query, context, mask=None, q_labels=None, k_labels=None):
        node = "Edu-CrossAttention"
        size, heads, width = heads_divide(params, node), params["num_heads"], params["embed_dim"]
        if query.dim() != context.dim():
            raise NodeError(f"{node}: query {shape_str(query.shape)} and context "
                            f"{shape_str(context.shape)} must both be 2-D or both be 3-D")
        q, c = batch_first(query, width, "query", node), batch_first(context, width, "context", node)
        if q.shape[0] != c.shape[0]:
            raise NodeError(f"{node}: query {shape_str(query.shape)} and context "
                            f"{shape_str(context.shape)} need the same batch size (second size)")
        two_d = query.dim() == 2
        block = blocked(q.shape[1], c.shape[1], False, mask, node)
        layers = projections(ctx, params, True, node)
        Q, K, V, scores, weights, joined = attend(layers, q, c, heads, block)
        output, weights = back(layers.W_o(joined), two_d), shown(weights, two_d)
        step(ctx, "input", f"The queries {shape_str(query.shape)} and the context "
             f"{shape_str(context.shape)} they read from.",
             query=as_float(query), context=as_float(context))
        step(ctx, "compute_qkv", f"Q from the query, K and V from the context, each cut into "
             f"{heads} heads of {size}.", Q=shown(Q, two_d), K=shown(K, two_d), V=shown(V, two_d))
        trace_scores(ctx, scores, two_d, size, block, mask, False, False)
        step(ctx, "softmax_weights", "Softmax along each row, over the context tokens: each "
             "query's weights add up to 1.", weights=weights)
        step(ctx, "concat_and_project", r"The heads' weighted sums side by side again, mixed by "
             r"$W_o$: one output row per query.", output=output)
        return {"output": output, "weights": weights, "q_labels": passed_on(q_labels),
                "k_labels": passed_on(k_labels)}
