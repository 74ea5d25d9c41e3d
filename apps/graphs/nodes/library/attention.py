"""The attention viewers' nodes (category LLM): AttentionHeatmap taps an attention node's
weights for the heatmap viewer, AttentionMask builds the boolean mask attention nodes take."""
from __future__ import annotations

from typing import Any

import torch

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode, shape_str

CATEGORY = "LLM"
COLORMAPS = ("viridis", "blues", "RdBu")


def token_list(value: Any, port: str, node: str) -> list[str]:
    """A LIST of tokens (or a 1-D tensor of token ids) as strings."""
    if isinstance(value, torch.Tensor):
        if value.dim() > 1:
            raise NodeError(f"{node}: '{port}' needs one token per position, but got a tensor of "
                            f"shape {shape_str(value.shape)}")
        value = value.reshape(-1).tolist()
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise NodeError(f"{node}: '{port}' needs a list of tokens, but received a value of type "
                        f"'{type(value).__name__}'; wire a Tokenizer's 'tokens' output here")
    return [str(v) for v in value]


@register
class AttentionHeatmap(LibraryNode):
    type = "AttentionHeatmap"
    category = CATEGORY
    description = "Shows attention weights as a heatmap and passes them on unchanged."
    details = (
        "Wire the 'weights' of any attention node here to see them as a grid of colours: row i "
        "is one query (a position that looks), column j one key (a position looked at), and "
        "the colour says how much query i attended to key j. It accepts [seq, seq], one panel "
        "per head for [heads, seq, seq], or [batch, heads, seq, seq]. The weights leave "
        "unchanged, so you can tap a wire without changing the graph. 'head_index' -1 keeps "
        "every head; 0 or more keeps only that head ([3, 5, 5] with head_index 1 gives [5, 5]; "
        "[2, 3, 5, 5] gives [2, 5, 5]); a 2-D input has one head and ignores it. 'labels' "
        "(for example a Tokenizer's tokens) name the rows and columns. 'colormap' only changes "
        "the colours the viewer draws with."
    )
    inputs = (Port("weights", description="[seq, seq], [heads, seq, seq] or [batch, heads, seq, seq]"),
              Port("labels", "LIST", optional=True, description="a name per position, for the axes"))
    outputs = (Port("weights"), Port("labels", "LIST"))
    params = (
        Param("head_index", "int", -1, "-1 shows every head; 0 or more keeps only that head "
              "(of a 3-D or 4-D input)", min=-1),
        Param("colormap", "select", "viridis", "The viewer's colours: viridis, blues, or RdBu "
              "(red-blue)", options=COLORMAPS),
    )

    def run(self, ctx, params, weights, labels=None):
        if weights.dim() not in (2, 3, 4):
            raise NodeError(f"AttentionHeatmap: 'weights' must be [seq, seq], [heads, seq, seq] or "
                            f"[batch, heads, seq, seq], but got shape {shape_str(weights.shape)} "
                            f"({weights.dim()}-D)")
        head = params["head_index"]
        if head >= 0 and weights.dim() > 2:
            axis = 0 if weights.dim() == 3 else 1
            heads = weights.shape[axis]
            if head >= heads:
                raise NodeError(f"AttentionHeatmap: head_index = {head} is out of range: the "
                                f"weights {shape_str(weights.shape)} have {heads} head"
                                f"{'s' if heads != 1 else ''}; use 0 to {heads - 1}, or -1 for all")
            weights = weights.select(axis, head)
        names = [] if labels is None else token_list(labels, "labels", "AttentionHeatmap")
        return {"weights": weights, "labels": names}


@register
class AttentionMask(LibraryNode):
    type = "AttentionMask"
    category = CATEGORY
    description = "Builds a boolean attention mask (True = blocked): causal, or padding."
    details = (
        "An attention mask says which pairs may not attend to each other: the output is a "
        "[seq, seq] grid of true/false, and True at row i, column j means position i may NOT "
        "look at position j. 'causal' blocks every later position (a GPT-style decoder sees "
        "only the past and itself): for 4 positions the upper triangle above the diagonal is "
        "True. 'padding' blocks the columns whose token equals 'pad_token', so no position "
        "attends to filler. The sequence length comes from 'tokens' (how many) or else from "
        "the first size of 'tensor'; wire at least one of them, and 'tokens' for padding. "
        "Wire the mask into an attention node's 'mask' input."
    )
    inputs = (Port("tensor", optional=True, description="a sequence; its first size is the length"),
              Port("tokens", "LIST", optional=True, description="the tokens (needed for padding)"))
    outputs = (Port("mask", description="bool [seq, seq], True = blocked"),)
    params = (
        Param("mode", "select", "causal", "causal: block later positions; padding: block the "
              "pad token's columns", options=("causal", "padding")),
        Param("pad_token", "string", "<pad>", "The token that counts as padding (padding mode only)"),
    )

    def run(self, ctx, params, tensor=None, tokens=None):
        if tensor is None and tokens is None:
            raise NodeError("AttentionMask needs a 'tensor' or a 'tokens' input to know the "
                            "sequence length; wire one of them")
        words = None if tokens is None else token_list(tokens, "tokens", "AttentionMask")
        if params["mode"] == "padding" and words is None:
            raise NodeError("AttentionMask in padding mode needs the 'tokens' input, to see which "
                            "positions hold the pad token; wire a token list")
        if words is not None:
            seq = len(words)
        elif tensor.dim() == 0:
            raise NodeError("AttentionMask: 'tensor' is a single number; it needs a sequence "
                            "(its first size is the length)")
        else:
            seq = int(tensor.shape[0])
        if seq == 0:
            raise NodeError("AttentionMask: the sequence is empty; it needs at least one position")
        ctx.check_size(seq * seq, "AttentionMask mask")
        if params["mode"] == "causal":
            mask = torch.ones(seq, seq, dtype=torch.bool, device=ctx.device).triu(diagonal=1)
        else:
            pad = torch.tensor([w == params["pad_token"] for w in words], dtype=torch.bool,
                               device=ctx.device)
            mask = pad.unsqueeze(0).expand(seq, seq).clone()
        return {"mask": mask}
