"""MoELayer: a Mixture-of-Experts feed-forward layer (category Transformer)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode, build_layer, shape_str, to_layer_dtype


class Expert(nn.Module):
    """One expert: Linear -> SiLU -> Linear, back to the token width."""

    def __init__(self, hidden_dim: int, expert_hidden_dim: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(hidden_dim, expert_hidden_dim)
        self.fc2 = nn.Linear(expert_hidden_dim, hidden_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.silu(self.fc1(x)))


class MixtureOfExperts(nn.Module):
    """A gate (no bias) scoring every expert per token, then the experts, built in that order
    (so a seed gives the same weights as CodefyUI's layer)."""

    def __init__(self, num_experts: int, top_k: int, hidden_dim: int, expert_hidden_dim: int) -> None:
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(hidden_dim, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(hidden_dim, expert_hidden_dim) for _ in range(num_experts))

    def forward(self, tokens: torch.Tensor):
        """tokens [N, H] -> output [N, H], routing weights [N, k], expert indices [N, k]."""
        scores, chosen = self.gate(tokens).topk(self.top_k, dim=-1)
        weights = scores.softmax(dim=-1)
        output = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            rows, slots = (chosen == e).nonzero(as_tuple=True)
            if rows.numel():
                output = output.index_add(0, rows, weights[rows, slots].unsqueeze(-1) * expert(tokens[rows]))
        return output, weights, chosen


@register
class MoELayer(LibraryNode):
    type = "MoELayer"
    category = "Transformer"
    description = "A Mixture-of-Experts layer: a gate sends each token to its top-k expert networks."
    details = (
        "Instead of one feed-forward network, this layer has 'num_experts' small ones (each "
        "Linear → SiLU → Linear, of inner width 'expert_hidden_dim') and a gate: a Linear "
        "layer that scores every expert for every token. Each token goes only to its 'top_k' "
        "best-scoring experts; a softmax over those k scores gives the 'routing_weights' "
        "(each token's row sums to 1) and the output is the weighted sum of those experts' "
        "answers. This is how Switch Transformer and Mixtral grow big without every token "
        "paying for every expert. 'x' is [batch, tokens, hidden_dim]; a 2-D [tokens, "
        "hidden_dim] counts as a batch of one, so [5, 128] gives output [1, 5, 128], and "
        "'routing_weights' and 'expert_indices' (which experts each token was sent to) are "
        "[1, 5, top_k]. The weights start from 'seed'."
    )
    inputs = (Port("x", description="[batch, tokens, hidden_dim] (or [tokens, hidden_dim])"),)
    outputs = (Port("output"), Port("routing_weights"), Port("expert_indices"))
    params = (
        Param("num_experts", "int", 4, "How many expert networks there are", min=1, max=256),
        Param("top_k", "int", 2, "How many experts each token is sent to (at most num_experts)", min=1),
        Param("hidden_dim", "int", 128, "The token width H (the last size of x)", min=1),
        Param("expert_hidden_dim", "int", 256, "The inner width of each expert network", min=1),
        Param("seed", "int", 42, "Starts the gate's and experts' weights from this seed"),
    )
    stateful = True

    def run(self, ctx, params, x):
        experts, k, width, inner = (params[n] for n in ("num_experts", "top_k", "hidden_dim",
                                                        "expert_hidden_dim"))
        if k > experts:
            raise NodeError(f"MoELayer: top_k = {k} is more than num_experts = {experts}; each "
                            f"token can be sent to at most {experts} experts, so set top_k to "
                            f"{experts} or less")
        if x.dim() not in (2, 3):
            raise NodeError(f"MoELayer expects 'x' as [batch, tokens, hidden_dim] (or [tokens, "
                            f"hidden_dim]), but got shape {shape_str(x.shape)} ({x.dim()}-D)")
        if x.shape[-1] != width:
            raise NodeError(f"Size mismatch: 'x' must have last size hidden_dim={width}, but has "
                            f"shape {shape_str(x.shape)}; set hidden_dim to {x.shape[-1]}")
        x = x.unsqueeze(0) if x.dim() == 2 else x
        weights = width * experts + experts * (2 * width * inner + inner + width)
        layer = build_layer(ctx, weights, "MoELayer weights",
                            lambda: MixtureOfExperts(experts, k, width, inner), seed=params["seed"])
        batch, tokens = x.shape[:2]
        output, routing, chosen = layer(to_layer_dtype(x, layer).reshape(batch * tokens, width))
        return {"output": output.reshape(batch, tokens, width),
                "routing_weights": routing.reshape(batch, tokens, k),
                "expert_indices": chosen.reshape(batch, tokens, k)}
