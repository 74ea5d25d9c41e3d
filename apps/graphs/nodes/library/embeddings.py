"""Vectors for words and positions (LLM): PositionalEncoding and EmbeddingScatter."""
from __future__ import annotations

import math

import numpy
import torch

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode, as_float, class_labels, seed_value, shape_str, step

CATEGORY = "LLM"

# t-SNE compares every point with every other one and cannot be stopped half-way: past this
# many points it would hold a run for minutes, so it is refused with a pointer to PCA.
TSNE_MAX_POINTS = 2000


# -- PositionalEncoding ------------------------------------------------------------------------

def sinusoidal_pe(seq: int, width: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d))."""
    position = torch.arange(seq, dtype=torch.float32).unsqueeze(1)
    rates = torch.exp(torch.arange(0, width, 2, dtype=torch.float32) * (-math.log(10000.0) / width))
    pe = torch.zeros(seq, width, dtype=torch.float32)
    angles = position * rates                      # [seq, ceil(d/2)]
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : width // 2])
    return pe


def learnable_pe(seq: int, width: int, seed: int) -> torch.Tensor:
    """A seeded random start for a learnt position table: N(0, 1) / √d, one row per position."""
    generator = torch.Generator().manual_seed(seed_value(seed))
    return torch.randn(seq, width, generator=generator, dtype=torch.float32) / math.sqrt(width)


@register
class PositionalEncoding(LibraryNode):
    type = "PositionalEncoding"
    category = CATEGORY
    description = "Adds a pattern to each token's vector that says where in the sentence the token stands."
    details = (
        "Attention compares every token with every other one but, on its own, cannot tell the "
        "first word from the last: shuffle the words and it gives the same answers, shuffled. "
        "This node adds a position pattern to each row so the order is part of the numbers. "
        "'sinusoidal' is the pattern of the original Transformer paper: column 2i of row pos "
        "holds sin(pos / 10000^(2i/d)) and column 2i+1 the cosine, so each pair of columns is a "
        "wave of a different length and every position gets its own mix. 'learnable' is the "
        "random starting table a model would learn from (drawn from 'seed', the same on every "
        "run; it is not trained here). The input is [seq, D] (one row per token, as "
        "Edu-TokenEmbedding gives it) or [seq, batch, D]; 'tensor' is input + pe with the same "
        "shape and 'pe' is the pattern alone, [seq, D]. A sequence longer than 'max_len' is "
        "refused."
    )
    inputs = (Port("tensor", description="Token vectors [seq, D] or [seq, batch, D]"),)
    outputs = (Port("tensor", description="Input + positional encoding, same shape"),
               Port("pe", description="The positional encoding alone [seq, D]"))
    params = (
        Param("mode", "select", "sinusoidal", "sinusoidal: the sine/cosine formula; learnable: a "
              "seeded random table", options=("sinusoidal", "learnable")),
        Param("max_len", "int", 512, "Longest sequence accepted", min=1),
        Param("seed", "int", 42, "Draws the learnable table (sinusoidal ignores it)"),
    )
    records_steps = True

    def run(self, ctx, params, tensor):
        x = as_float(tensor)
        if x.dim() not in (2, 3):
            raise NodeError(f"PositionalEncoding expects [seq, D] or [seq, batch, D], but got shape "
                            f"{shape_str(x.shape)} ({x.dim()}-D)")
        seq, width = x.shape[0], x.shape[-1]
        if seq > params["max_len"]:
            raise NodeError(f"PositionalEncoding: the input has seq_len={seq} but max_len="
                            f"{params['max_len']}; raise max_len or shorten the input")
        if width == 0:
            raise NodeError(f"PositionalEncoding needs at least one number per token, but got shape "
                            f"{shape_str(x.shape)}")
        ctx.check_size(seq * width, "PositionalEncoding's table")
        if params["mode"] == "sinusoidal":
            pe = sinusoidal_pe(seq, width)
        else:
            pe = learnable_pe(seq, width, params["seed"])
        pe = pe.to(device=x.device, dtype=x.dtype)
        out = x + (pe if x.dim() == 2 else pe.unsqueeze(1))
        step(ctx, "input", f"The token vectors, shape {shape_str(x.shape)}: seq = {seq} tokens of "
             f"d = {width} numbers.", tensor=x)
        if params["mode"] == "sinusoidal":
            formula = (r"$PE_{pos,2i} = \sin(pos / 10000^{2i/d})$ and "
                       r"$PE_{pos,2i+1} = \cos(pos / 10000^{2i/d})$")
        else:
            formula = r"random numbers from the seed, $PE \sim \mathcal{N}(0, 1) / \sqrt{d}$"
        step(ctx, "compute_pe", f"The {params['mode']} pattern, shape [{seq}, {width}]: {formula}.",
             pe=pe)
        step(ctx, "add", "Add the pattern to each token's vector, $x_{pos} + PE_{pos}$: each token "
             "now carries its position along with its meaning.", output=out)
        return {"tensor": out, "pe": pe}


# -- EmbeddingScatter ------------------------------------------------------------------------

@register
class EmbeddingScatter(LibraryNode):
    type = "EmbeddingScatter"
    category = CATEGORY
    description = "Squashes many long vectors into 2-D points you can plot, keeping similar ones close."
    details = (
        "Word vectors have many numbers each (16 for demo-16d), too many directions to draw. "
        "This node gives each vector a point on a flat map: 'embeddings' [N, D] become "
        "'points_2d' [N, 2], and 'labels' (the words) pass through so each point keeps its "
        "name. PCA finds the two directions in which the vectors spread out most and measures "
        "each vector along them: the same map on every run. t-SNE moves the points around "
        "until vectors that were neighbours stay neighbours; it often shows tighter groups, "
        "and 'seed' fixes its layout and 'perplexity' how many neighbours each point cares "
        "about (it must be below N, so it is lowered when the vectors are few; with under 5 "
        "vectors PCA is used instead). The points are then centred on 0 and scaled so the "
        "farthest coordinate is 1. Distances on the map are only a hint: the real closeness "
        "is in the vectors (see CosineSimilarity)."
    )
    inputs = (Port("embeddings", description="The vectors [N, D]"),
              Port("labels", "LIST", optional=True, description="One label per vector"))
    outputs = (Port("points_2d", description="One point per vector [N, 2], within [-1, 1]"),
               Port("labels", "LIST", description="The labels, passed through"))
    params = (
        Param("method", "select", "PCA", "PCA: straight projection, same every time; t-SNE: keeps "
              "neighbours together", options=("PCA", "t-SNE")),
        Param("perplexity", "float", 5.0, "t-SNE only: about how many neighbours each point keeps",
              min=2.0, max=50.0),
        Param("seed", "int", 42, "t-SNE only: the same seed gives the same layout"),
    )
    records_steps = True

    def run(self, ctx, params, embeddings, labels=None):
        x = embeddings
        if x.dim() == 1:
            x = x.unsqueeze(0)
        if x.dim() != 2:
            raise NodeError(f"EmbeddingScatter expects 'embeddings' as [N, D] (one vector per row), "
                            f"but got shape {shape_str(x.shape)}")
        n, width = x.shape
        if n == 0 or width == 0:
            raise NodeError(f"EmbeddingScatter needs at least one vector with at least one number, "
                            f"but 'embeddings' has shape {shape_str(x.shape)} (did WordVector find "
                            "none of its words?)")
        names = [] if labels is None else class_labels(labels, "labels", self.type)
        if labels is not None and len(names) != n:
            raise NodeError(f"EmbeddingScatter: 'labels' has {len(names)} labels but 'embeddings' "
                            f"has {n} vectors; give one label per vector")
        x = as_float(x).detach()
        if not bool(torch.isfinite(x).all()):
            raise NodeError("EmbeddingScatter: 'embeddings' holds NaN or infinite values, which "
                            "cannot be placed on a map")
        ctx.check_size(n * width, "EmbeddingScatter's table")
        method = params["method"]
        step(ctx, "input", f"{n} vectors of {width} numbers each.", {"N": float(n), "D": float(width)},
             embeddings=x)
        data = x.cpu().numpy().astype(numpy.float64)
        if method == "t-SNE" and n < 5:
            ctx.log(f"EmbeddingScatter: t-SNE needs at least 5 vectors, got {n}; PCA was used instead")
            step(ctx, "fallback", f"t-SNE needs at least 5 vectors but there are {n}: PCA is used "
                 "instead.", {"requested_perplexity": float(params["perplexity"])})
            method = "PCA"
        if method == "PCA":
            projected = self._pca(ctx, data, params["seed"])
        else:
            projected = self._tsne(ctx, data, params["perplexity"], params["seed"])
        centred = projected - projected.mean(axis=0, keepdims=True)
        scale = float(numpy.abs(centred).max())
        if scale > 0:
            centred = centred / scale
        points = torch.from_numpy(centred.astype(numpy.float32)).to(ctx.device)
        step(ctx, "normalize", "Centre the points on 0 and divide by the largest coordinate, so "
             r"every point lies within $[-1, 1]$.", points_2d=points)
        return {"points_2d": points, "labels": names}

    @staticmethod
    def _pca(ctx, data: numpy.ndarray, seed: int) -> numpy.ndarray:
        n, width = data.shape
        components = min(2, n, width)
        if n < 2:  # one vector: it is its own centre
            step(ctx, "pca", "A single vector: its point is the centre of the map.",
                 {"explained_variance_pc1": 1.0})
            return numpy.zeros((n, 2))
        from sklearn.decomposition import PCA

        pca = PCA(n_components=components, random_state=seed_value(seed) % 2**32)
        fit = pca.fit_transform(data)
        if components < 2:
            fit = numpy.concatenate([fit, numpy.zeros((n, 2 - components))], axis=1)
        ratio = pca.explained_variance_ratio_
        pc1 = float(ratio[0]) if len(ratio) and numpy.isfinite(ratio[0]) else 0.0
        step(ctx, "pca", "Measure each vector along the two directions in which the vectors spread "
             r"out most (the top two principal components): $p_i = (x_i - \bar{x})\,[c_1, c_2]$. "
             f"The first direction holds {pc1:.0%} of the spread.",
             {"explained_variance_pc1": pc1}, projected=torch.from_numpy(fit.astype(numpy.float32)))
        return fit

    @staticmethod
    def _tsne(ctx, data: numpy.ndarray, perplexity: float, seed: int) -> numpy.ndarray:
        n = data.shape[0]
        if n > TSNE_MAX_POINTS:
            raise NodeError(f"EmbeddingScatter: t-SNE takes at most {TSNE_MAX_POINTS} vectors, but "
                            f"'embeddings' has {n}; use method PCA, or fewer vectors")
        ctx.check_size(n * n, "t-SNE's table of distances between every pair of vectors")
        used = max(2.0, min(float(perplexity), n - 1.0))
        if used != perplexity:
            ctx.log(f"EmbeddingScatter: perplexity {perplexity:g} must be below the number of "
                    f"vectors ({n}); {used:g} was used")
        from sklearn.manifold import TSNE

        tsne = TSNE(n_components=2, perplexity=used, random_state=seed_value(seed) % 2**32,
                    init="pca", learning_rate="auto")
        fit = tsne.fit_transform(data)
        step(ctx, "tsne", f"Move the points on a flat map until each one keeps the same neighbours "
             f"it had among the vectors (perplexity {used:g}: about how many neighbours count).",
             {"perplexity": used}, projected=torch.from_numpy(fit.astype(numpy.float32)))
        return fit
