"""Small language-model parts: a feed-forward block and a token-embedding table."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from apps.graphs.nodes.base import NodeError, Param, Port
from apps.graphs.nodes.library._helpers import (LibraryNode, as_float, build_layer, normal_init,
                                                seed_value, shape_str, step)

CATEGORY = "LLM"


class FeedForward(nn.Module):
    """Linear → activation → Linear, giving back the hidden activations as well."""

    def __init__(self, embed_dim: int, hidden_dim: int, activation: str, seed: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(embed_dim, hidden_dim), nn.Linear(hidden_dim, embed_dim)
        self.activation = activation
        normal_init(seed, (self.fc1, self.fc2))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.fc1(x)
        active = F.relu(hidden) if self.activation == "relu" else F.gelu(hidden)
        return self.fc2(active), active


class FFN(LibraryNode):
    type = "foundations:Edu-FFN"
    category = CATEGORY
    description = "A tiny feed-forward block: Linear → activation → Linear, as inside a Transformer."
    details = (
        "Every Transformer layer passes each token through the same two-layer network: a "
        "Linear layer widens the vector from 'embed_dim' to 'hidden_dim' numbers, an "
        "activation (relu or gelu) bends it, and a second Linear layer brings it back to "
        "'embed_dim'. The shape does not change: [5, 8] → [5, 8]. 'activations' shows the "
        "hidden vectors after the activation ([5, 16] with the defaults), so you can see "
        "which hidden units switch on. The weights start from 'seed' (the same numbers every "
        "run: normal values times 1/√inputs, biases zero)."
    )
    inputs = (Port("tensor", description="[..., embed_dim]"),)
    outputs = (Port("tensor"), Port("activations"))
    params = (
        Param("embed_dim", "int", 8, "Size of each input and output vector", min=1),
        Param("hidden_dim", "int", 16, "Size of the hidden layer", min=1),
        Param("activation", "select", "relu", "The bend between the two layers",
              options=("relu", "gelu")),
        Param("seed", "int", 42, "Same seed, same starting weights"),
    )
    stateful = True
    records_steps = True

    def run(self, ctx, params, tensor):
        width, hidden = params["embed_dim"], params["hidden_dim"]
        if tensor.dim() == 0 or tensor.shape[-1] != width:
            raise NodeError(f"Size mismatch: Edu-FFN expects the input's last size to be "
                            f"embed_dim={width}, but the input has shape {shape_str(tensor.shape)}")
        block = build_layer(ctx, 2 * width * hidden + width + hidden, "Edu-FFN weights",
                            lambda: FeedForward(width, hidden, params["activation"], params["seed"]))
        x = as_float(tensor)
        out, active = block(x)
        step(ctx, "input", f"The input, shape {shape_str(x.shape)}.", tensor=x)
        step(ctx, "linear1", f"Widen each vector to {hidden} numbers: $h = xW_1^T + b_1$.",
             hidden=block.fc1(x))
        step(ctx, "activation", f"Apply {params['activation']} to every number: "
             + (r"$a = \max(0, h)$." if params["activation"] == "relu" else r"$a = \mathrm{GELU}(h)$."),
             activations=active)
        step(ctx, "linear2", f"Back to {width} numbers: $y = aW_2^T + b_2$.", output=out)
        return {"tensor": out, "activations": active}


def stable_hash(token: str, buckets: int) -> int:
    """32-bit FNV-1a of the token's UTF-8 bytes, modulo ``buckets``: the same row for the same
    token in every process (Python's own hash() changes from run to run)."""
    h = 0x811C9DC5
    for byte in token.encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h % buckets


def _items(value, port: str) -> list:
    if value is None:
        return []
    if isinstance(value, torch.Tensor):
        return value.reshape(-1).tolist()
    if isinstance(value, str):
        return value.split()
    if isinstance(value, (list, tuple)):
        return list(value)
    raise NodeError(f"Input '{port}' of Edu-TokenEmbedding needs a list, but received a value of "
                    f"type '{type(value).__name__}'")


def _whole(value, port: str) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not number.is_integer():
        raise NodeError(f"Input '{port}' of Edu-TokenEmbedding needs whole-number ids, but holds "
                        f"{value!r}")
    return int(number)


class TokenEmbedding(LibraryNode):
    type = "foundations:Edu-TokenEmbedding"
    category = CATEGORY
    description = "Turns a list of tokens into a table of small vectors, one row per token."
    details = (
        "A language model cannot compute with words, so each token gets a row of numbers from "
        "an embedding table with 'vocab_size' rows of 'embed_dim' numbers. Wire in 'tokens' "
        "(words) or 'token_ids' (whole numbers), or both (ids for the lookup, tokens as "
        "names). 'hash' mode sends a word to row hash(word) mod vocab_size (an id to id mod "
        "vocab_size), so the same word always gets the same vector; 'ordinal' mode numbers "
        "the words in the order they first appear (the first word row 0, the next new one row "
        "1 …) and 'vocab' lists them in that order. Five tokens give 'embeddings' [5, 8]. The "
        "table is random numbers from 'seed' (the same every run); it is not trained here."
    )
    inputs = (Port("tokens", "LIST", optional=True), Port("token_ids", "LIST", optional=True))
    outputs = (Port("embeddings"), Port("vocab", "LIST"))
    params = (
        Param("embed_dim", "int", 8, "Length of each vector", min=1),
        Param("vocab_size", "int", 32, "Rows in the table", min=1),
        Param("seed", "int", 42, "Same seed, same table"),
        Param("mode", "select", "hash", "How a token finds its row", options=("hash", "ordinal")),
    )
    records_steps = True

    def run(self, ctx, params, tokens=None, token_ids=None):
        if tokens is None and token_ids is None:
            raise NodeError("Edu-TokenEmbedding needs 'tokens' or 'token_ids' wired in")
        width, rows = params["embed_dim"], params["vocab_size"]
        ctx.check_size(rows * width, "Edu-TokenEmbedding table")
        words = [str(t) for t in _items(tokens, "tokens")]
        ids = [_whole(i, "token_ids") for i in _items(token_ids, "token_ids")]
        if tokens is not None and token_ids is not None:
            words, ids = words[:min(len(words), len(ids))], ids[:min(len(words), len(ids))]
        elif token_ids is not None:
            words = [f"<id:{i}>" for i in ids]
        generator = torch.Generator().manual_seed(seed_value(params["seed"]))
        table = (torch.randn(rows, width, generator=generator) / math.sqrt(width)).to(ctx.device)
        vocab, seen = [], {}
        for word in words:
            if word not in seen:
                seen[word] = len(seen) % rows
                vocab.append(word)
        if params["mode"] == "ordinal":
            row_ids = [seen[w] for w in words]
        elif ids:
            row_ids = [i % rows for i in ids]
        else:
            row_ids = [stable_hash(w, rows) for w in words]
        embeddings = table[torch.tensor(row_ids, dtype=torch.long, device=ctx.device)]
        step(ctx, "input_tokens", f"Find the table row of each of the {len(row_ids)} tokens "
             f"({params['mode']} mode).",
             {"seq_len": float(len(row_ids)), "embed_dim": float(width), "vocab_size": float(rows)})
        step(ctx, "embedding_table", f"The table: {rows} rows of {width} random numbers.",
             table=table)
        step(ctx, "lookup", r"Copy each token's row: $e_i = T[\mathrm{row}(t_i)]$.",
             embeddings=embeddings)
        return {"embeddings": embeddings, "vocab": vocab}
