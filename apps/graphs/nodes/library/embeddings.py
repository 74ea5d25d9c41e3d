"""Vectors for words and positions (LLM): WordVector, CosineSimilarity, PositionalEncoding and
EmbeddingScatter."""
from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy
import torch
import torch.nn.functional as F

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode, as_float, class_labels, random_state, seed_value, shape_str, step

CATEGORY = "LLM"

# WordVector's bundled tables: backend name -> file beside this module (vectors/make_demo_16d.py
# writes demo_16d.json).
BACKENDS = {"demo-16d": Path(__file__).resolve().parent / "vectors" / "demo_16d.json"}
MAX_WORDS = 100_000   # words one WordVector looks up (a Python loop)

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

        pca = PCA(n_components=components, random_state=random_state(seed))
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

        tsne = TSNE(n_components=2, perplexity=used, random_state=random_state(seed),
                    init="pca", learning_rate="auto")
        fit = tsne.fit_transform(data)
        step(ctx, "tsne", f"Move the points on a flat map until each one keeps the same neighbours "
             f"it had among the vectors (perplexity {used:g}: about how many neighbours count).",
             {"perplexity": used}, projected=torch.from_numpy(fit.astype(numpy.float32)))
        return fit


# -- WordVector --------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4)
@functools.lru_cache(maxsize=None)
def _read_backend(backend: str) -> tuple[tuple[str, ...], tuple[tuple[float, ...], ...]]:
    """A bundled backend's words (sorted) and their vectors, read from its file once per process."""
    vectors = json.loads(BACKENDS[backend].read_text(encoding="utf-8"))["vectors"]
    words = tuple(sorted(vectors))
    return words, tuple(tuple(vectors[w]) for w in words)


def word_table(backend: str) -> tuple[dict[str, int], torch.Tensor]:
    """(word -> row, the [V, D] table) of a bundled backend."""
    words, rows = _read_backend(backend)
    return {w: i for i, w in enumerate(words)}, torch.tensor(rows, dtype=torch.float32)


def _words(value, fallback: str) -> list[str]:
    if value is None:
        value = fallback
    if isinstance(value, str):
        return value.replace(",", " ").split()
    if isinstance(value, torch.Tensor):
        value = value.reshape(-1).tolist()
    if not isinstance(value, (list, tuple)):
        raise NodeError(f"Input 'tokens' of WordVector needs a list of words, but received a value "
                        f"of type '{type(value).__name__}'")
    return [str(v) for v in value]


def _listing(words: list[str], most: int = 12) -> str:
    shown = ", ".join(words[:most])
    return shown + (f" and {len(words) - most} more" if len(words) > most else "")


@register
class WordVector(LibraryNode):
    type = "WordVector"
    category = CATEGORY
    description = "Looks up a ready-made meaning vector for each word, so similar words get similar vectors."
    details = (
        "Each word gets a row of numbers from a table where words that mean similar things "
        "have similar rows. The bundled 'demo-16d' table, made for this product, knows about 80 "
        "common words (king, queen, man, woman, cat, dog, car, rain, think, ...) with 16 "
        "numbers each, one per meaning: royalty, gender (+ male, - female), human, animal, "
        "young, divine, pet, family, water, sky, big, vehicle, food, weather, motion and mind. "
        "That is why king - man + woman lands next to queen (try it with Add and "
        "CosineSimilarity). Wire in 'tokens' (a list, e.g. from Tokenizer with the word "
        "family) or type 'words' separated by spaces or commas; upper case does not matter. "
        "Six known words give 'embeddings' [6, 16] and 'labels' the six words. A word the "
        "table does not know is dropped (the run log names it), or with 'keep_oov' it keeps a "
        "row of zeros. 'normalize' scales every row to length 1."
    )
    inputs = (Port("tokens", "LIST", optional=True,
                   description="The words to look up (else the 'words' param)"),)
    outputs = (Port("embeddings", description="One vector per word [N, 16]"),
               Port("labels", "LIST", description="The words, in the order of the rows"))
    params = (
        Param("backend", "select", "demo-16d", "Which table of word vectors (demo-16d ships with "
              "the product)", options=tuple(BACKENDS)),
        Param("words", "string", "king queen man woman cat dog",
              "Words separated by spaces or commas, used when nothing is wired into 'tokens'"),
        Param("normalize", "bool", False, "Scale every vector to length 1"),
        Param("keep_oov", "bool", False, "Keep unknown words as a row of zeros instead of dropping "
              "them"),
    )
    records_steps = True

    def run(self, ctx, params, tokens=None):
        words = [w.strip().lower() for w in _words(tokens, params["words"])]
        words = [w for w in words if w]
        if not words:
            raise NodeError("WordVector has no words to look up: type some in 'words' or wire a "
                            "list into 'tokens'")
        if len(words) > MAX_WORDS:
            raise NodeError(f"WordVector looks up at most {MAX_WORDS:,} words at once, but got "
                            f"{len(words):,}")
        index, table = word_table(params["backend"])
        width = table.shape[1]
        ctx.check_size(len(words) * width, "WordVector's vectors")
        step(ctx, "input_words", f"{len(words)} words to look up in {params['backend']} "
             f"({len(index)} words of {width} numbers).",
             {"input_count": float(len(words)), "vocab_size": float(len(index))})
        rows, labels, unknown = [], [], []
        for word in words:
            row = index.get(word)
            if row is None:
                unknown.append(word)
                if not params["keep_oov"]:
                    continue
            rows.append(-1 if row is None else row)
            labels.append(word)
        if not rows:
            raise NodeError(f"WordVector: none of the words ({_listing(words)}) is in "
                            f"{params['backend']}; try words such as king, queen, cat, dog, car, "
                            "rain, or turn on keep_oov")
        if unknown:
            ctx.log(f"WordVector: not in {params['backend']}, "
                    f"{'kept as zeros' if params['keep_oov'] else 'dropped'}: {_listing(unknown)}")
        known = torch.tensor([max(r, 0) for r in rows], dtype=torch.long)
        vectors = table[known] * torch.tensor([r >= 0 for r in rows], dtype=torch.float32).unsqueeze(1)
        found = len(words) - len(unknown)
        step(ctx, "lookup", f"Copy the row of each word from the table: {found} found, "
             f"{len(unknown)} unknown" + (" (rows of zeros)." if params["keep_oov"] and unknown else "."),
             {"matched": float(found), "oov": float(len(unknown)), "dim": float(width)},
             embeddings=vectors)
        if params["normalize"]:
            lengths = vectors.norm(dim=1, keepdim=True)
            vectors = vectors / torch.where(lengths > 0, lengths, torch.ones_like(lengths))
            step(ctx, "normalize", r"Divide each vector by its length, $v / \lVert v \rVert$, so "
                 "every row has length 1 and a dot product is the cosine similarity.",
                 embeddings=vectors)
        return {"embeddings": vectors.to(ctx.device), "labels": labels}


# -- CosineSimilarity ----------------------------------------------------------------------------

def _rows(x: torch.Tensor, port: str) -> torch.Tensor:
    if x.dim() == 1:
        x = x.unsqueeze(0)
    if x.dim() != 2:
        raise NodeError(f"CosineSimilarity expects '{port}' as [N, D] (one vector per row) or [D], "
                        f"but got shape {shape_str(x.shape)}")
    return as_float(x)


@register
class CosineSimilarity(LibraryNode):
    type = "CosineSimilarity"
    category = CATEGORY
    description = "Scores how closely each query vector points the same way as each key vector, and lists the best keys."
    details = (
        "Two vectors that point the same way have cosine similarity 1, at right angles 0, "
        "opposite -1; how long they are does not matter. For every row of 'queries' [M, D] "
        "(or one vector [D]) and every row of 'keys' [N, D] this node computes "
        "cos = q·k / (|q| |k|), giving 'similarity' [M, N]. For each query it also lists the "
        "'top_k' keys with the highest score, best first: 'top_k_indices' (row numbers) and, "
        "when 'key_labels' (one label per key, e.g. WordVector's labels) is wired in, "
        "'top_k_labels'. 'exclude_self_words' (labels separated by commas) leaves those keys "
        "out of the lists: for king - man + woman, exclude king,man,woman and the best key "
        "is queen. This is how a search engine over vectors finds the nearest documents."
    )
    inputs = (Port("queries", description="Vectors to compare [M, D] or [D]"),
              Port("keys", description="Vectors to compare against [N, D]"),
              Port("key_labels", "LIST", optional=True, description="One label per key"))
    outputs = (Port("similarity", description="Cosine similarity of every query and key [M, N]"),
               Port("top_k_indices", "LIST", description="Per query, the best key rows"),
               Port("top_k_labels", "LIST", description="Per query, the best keys' labels"))
    params = (
        Param("top_k", "int", 5, "How many best keys to list per query", min=1),
        Param("exclude_self_words", "string", "", "Key labels to leave out of the lists, separated "
              "by commas (e.g. king,man,woman)"),
    )
    records_steps = True

    def run(self, ctx, params, queries, keys, key_labels=None):
        q, k = _rows(queries, "queries"), _rows(keys, "keys")
        if q.shape[1] != k.shape[1]:
            raise NodeError(f"CosineSimilarity: queries have D={q.shape[1]} numbers per vector but "
                            f"keys have D={k.shape[1]}; both need the same length")
        if k.shape[0] == 0 or q.shape[0] == 0:
            raise NodeError(f"CosineSimilarity needs at least one query and one key, but got queries "
                            f"{shape_str(q.shape)} and keys {shape_str(k.shape)}")
        labels = [] if key_labels is None else class_labels(key_labels, "key_labels", self.type)
        if key_labels is not None and len(labels) != k.shape[0]:
            raise NodeError(f"CosineSimilarity: 'key_labels' has {len(labels)} labels but 'keys' has "
                            f"{k.shape[0]} vectors; give one label per key")
        excluded = {w.strip().lower() for w in params["exclude_self_words"].split(",") if w.strip()}
        if excluded and not labels:
            ctx.log("CosineSimilarity: exclude_self_words needs 'key_labels' wired in; nothing was "
                    "excluded")
        step(ctx, "input", f"{q.shape[0]} queries and {k.shape[0]} keys of {q.shape[1]} numbers each.",
             {"Q": float(q.shape[0]), "K": float(k.shape[0]), "D": float(q.shape[1])})
        similarity = F.normalize(q, dim=1) @ F.normalize(k, dim=1).T
        step(ctx, "similarity", r"$\cos(q_i, k_j) = \dfrac{q_i \cdot k_j}{\lVert q_i \rVert\,\lVert k_j \rVert}$ "
             "for every query i and key j.", similarity=similarity)
        left_out = [j for j, label in enumerate(labels) if label.lower() in excluded]
        ranked = similarity.detach().clone()
        if left_out:
            ranked[:, left_out] = -math.inf
        count = min(params["top_k"], k.shape[0] - len(left_out))
        indices = torch.topk(ranked, k=count, dim=1).indices.tolist() if count > 0 else [[] for _ in range(q.shape[0])]
        top_labels = [[labels[j] for j in row] if labels else [] for row in indices]
        step(ctx, "top_k", f"Keep the {count} keys with the highest score for each query"
             + (f", leaving out {', '.join(sorted(excluded))}." if excluded and labels else "."),
             {"k": float(count), "excluded": float(len(left_out))},
             top_k_indices=torch.tensor(indices, dtype=torch.long).reshape(q.shape[0], count))
        return {"similarity": similarity, "top_k_indices": indices, "top_k_labels": top_labels}
