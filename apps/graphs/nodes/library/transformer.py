"""Attention and Transformer layers."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode, build_layer, need_rank, shape_str, step, to_layer_dtype

CATEGORY = "Transformer"


def _heads_divide(width: int, heads: int, width_name: str, heads_name: str) -> None:
    if width % heads:
        raise NodeError(f"'{width_name}' = {width} must be divisible by '{heads_name}' = {heads}, "
                        "because each head gets an equal share of it")


def _width(x: torch.Tensor, expected: int, port: str, param: str) -> None:
    if x.shape[-1] != expected:
        raise NodeError(f"Size mismatch: '{port}' must have last size {param}={expected}, but "
                        f"has shape {shape_str(x.shape)}; set {param} to {x.shape[-1]}")


@register
class MultiHeadAttention(LibraryNode):
    type = "MultiHeadAttention"
    category = CATEGORY
    description = "Lets every position look at every other position and mix in what is relevant."
    details = (
        "Each query vector is compared with every key vector; the scores, scaled by √d_k and "
        "turned into probabilities by softmax, say how much of each value vector to mix in. "
        "The work is split into 'num_heads' heads that each look for different relations, "
        "then recombined. Inputs use the layout [seq, batch, embed_dim] (or [seq, embed_dim] "
        "without a batch); for self-attention wire the same tensor into query, key and value. "
        "With embed_dim 512, query [10, 1, 512] and key/value [12, 1, 512] give 'output' "
        "[10, 1, 512] and 'weights' [1, 10, 12]: for each query, how much it attended to each "
        "key, averaged over the heads. embed_dim must be divisible by num_heads."
    )
    inputs = (Port("query"), Port("key"), Port("value"))
    outputs = (Port("output"), Port("weights"))
    params = (
        Param("embed_dim", "int", 512, "Size of each query/key/value vector", min=1),
        Param("num_heads", "int", 8, "How many attention heads", min=1),
    )
    stateful = True
    records_steps = True

    def run(self, ctx, params, query, key, value):
        width, heads = params["embed_dim"], params["num_heads"]
        _heads_divide(width, heads, "embed_dim", "num_heads")
        for name, x in (("query", query), ("key", key), ("value", value)):
            need_rank(x, (2, 3), f"MultiHeadAttention '{name}'",
                      "[seq, batch, embed_dim] (or [seq, embed_dim])")
            _width(x, width, name, "embed_dim")
        if not query.dim() == key.dim() == value.dim():
            raise NodeError("query, key and value must all be 2-D or all be 3-D, got "
                            f"{shape_str(query.shape)}, {shape_str(key.shape)}, {shape_str(value.shape)}")
        if key.shape[0] != value.shape[0]:
            raise NodeError(f"Size mismatch: key {shape_str(key.shape)} and value "
                            f"{shape_str(value.shape)} need the same sequence length (first size)")
        if not query.shape[1:-1] == key.shape[1:-1] == value.shape[1:-1]:
            raise NodeError(f"Size mismatch: query {shape_str(query.shape)}, key "
                            f"{shape_str(key.shape)} and value {shape_str(value.shape)} need the "
                            "same batch size (second size)")
        layer = build_layer(ctx, 4 * width * (width + 1), "MultiHeadAttention weights",
                            lambda: nn.MultiheadAttention(width, heads))
        q, k, v = (to_layer_dtype(x, layer) for x in (query, key, value))
        output, weights = layer(q, k, v, need_weights=True, average_attn_weights=True)
        if ctx.verbose:
            self._trace(ctx, layer, q, k, v, heads, output)
        return {"output": output, "weights": weights}

    @staticmethod
    def _trace(ctx, layer, q, k, v, heads, output) -> None:
        """The layer's own computation, written out step by step with its real projections."""
        width = layer.embed_dim
        d_k = width // heads
        w, b = layer.in_proj_weight, layer.in_proj_bias
        Q, K, V = (F.linear(x, w[i * width:(i + 1) * width], b[i * width:(i + 1) * width])
                   for i, x in enumerate((q, k, v)))

        def split(x):  # [seq, batch, E] or [seq, E] -> [batch, heads, seq, d_k]
            x = x if x.dim() == 3 else x.unsqueeze(1)
            return x.reshape(x.shape[0], x.shape[1], heads, d_k).permute(1, 2, 0, 3)

        scores = split(Q) @ split(K).transpose(-2, -1) / math.sqrt(d_k)
        probs = scores.softmax(dim=-1)
        step(ctx, "inputs_qkv", "The inputs projected by the layer's learned matrices: "
             "$Q = qW_Q + b_Q$, $K = kW_K + b_K$, $V = vW_V + b_V$.", Q=Q, K=K, V=V)
        step(ctx, "scaled_scores", f"Per head: $QK^T / \\sqrt{{d_k}}$ with $d_k = {d_k}$; shape "
             "[batch, heads, queries, keys].", scalars={"d_k": float(d_k)}, scores=scores)
        step(ctx, "softmax_weights", "Softmax over the keys: each query's weights sum to 1.",
             weights=probs)
        mixed = probs @ split(V)
        step(ctx, "attended_output", "Weighted sum of the values per head, heads joined side by "
             "side, then the output projection $W_O$.", heads=mixed, output=output)


def _sequence(x: torch.Tensor, d_model: int, port: str, node: str) -> None:
    need_rank(x, (2, 3), f"{node} '{port}'", "[batch, seq, d_model] (or [seq, d_model])")
    _width(x, d_model, port, "d_model")


ENCODER_PARAMS = (
    Param("d_model", "int", 512, "Size of each token vector", min=1),
    Param("nhead", "int", 8, "Attention heads per layer", min=1),
    Param("num_layers", "int", 6, "How many blocks are stacked", min=1),
    Param("dim_feedforward", "int", 2048, "Hidden size of each block's feed-forward part", min=1),
)


@register
class TransformerEncoder(LibraryNode):
    type = "TransformerEncoder"
    category = CATEGORY
    description = "A stack of Transformer blocks: self-attention plus a small feed-forward network."
    details = (
        "Each of the 'num_layers' blocks lets every token attend to all the others "
        "(self-attention with 'nhead' heads), then passes each token through a feed-forward "
        "network of size 'dim_feedforward'; both parts have a skip connection and LayerNorm. "
        "The input is [batch, seq, d_model] (batch first) and the shape does not change: "
        "[2, 10, 512] → [2, 10, 512], but every token now carries information from the whole "
        "sequence. d_model must be divisible by nhead. Dropout is off, so the same input "
        "always gives the same output."
    )
    inputs = (Port("tensor"),)
    outputs = (Port("tensor"),)
    params = ENCODER_PARAMS
    stateful = True

    def run(self, ctx, params, tensor):
        d, heads, layers, ff = (params[k] for k in ("d_model", "nhead", "num_layers", "dim_feedforward"))
        _heads_divide(d, heads, "d_model", "nhead")
        _sequence(tensor, d, "tensor", "TransformerEncoder")
        block = lambda: nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True)
        layer = build_layer(ctx, layers * (4 * d * d + 2 * d * ff), "TransformerEncoder weights",
                            lambda: nn.TransformerEncoder(block(), layers, enable_nested_tensor=False))
        return {"tensor": layer(to_layer_dtype(tensor, layer))}


@register
class TransformerDecoder(LibraryNode):
    type = "TransformerDecoder"
    category = CATEGORY
    description = "A stack of Transformer decoder blocks that also attend to an encoder's output (memory)."
    details = (
        "Each block first lets the tokens of 'tensor' attend to each other, then attend to "
        "'memory' (usually the TransformerEncoder's output, e.g. the sentence being "
        "translated), then runs a feed-forward network; every part has a skip connection and "
        "LayerNorm. Both inputs are [batch, seq, d_model] (batch first) and may have "
        "different lengths: tensor [2, 7, 512] with memory [2, 10, 512] gives [2, 7, 512]. "
        "Params mean the same as in TransformerEncoder; no causal mask is applied and dropout "
        "is off."
    )
    inputs = (Port("tensor"), Port("memory"))
    outputs = (Port("tensor"),)
    params = ENCODER_PARAMS
    stateful = True

    def run(self, ctx, params, tensor, memory):
        d, heads, layers, ff = (params[k] for k in ("d_model", "nhead", "num_layers", "dim_feedforward"))
        _heads_divide(d, heads, "d_model", "nhead")
        _sequence(tensor, d, "tensor", "TransformerDecoder")
        _sequence(memory, d, "memory", "TransformerDecoder")
        if tensor.dim() != memory.dim() or (tensor.dim() == 3 and tensor.shape[0] != memory.shape[0]):
            raise NodeError(f"Size mismatch: tensor {shape_str(tensor.shape)} and memory "
                            f"{shape_str(memory.shape)} need the same batch size")
        block = lambda: nn.TransformerDecoderLayer(d, heads, ff, dropout=0.0, batch_first=True)
        layer = build_layer(ctx, layers * (8 * d * d + 2 * d * ff), "TransformerDecoder weights",
                            lambda: nn.TransformerDecoder(block(), layers))
        return {"tensor": layer(to_layer_dtype(tensor, layer), to_layer_dtype(memory, layer))}
