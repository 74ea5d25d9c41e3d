"""The text and embedding nodes (LLM): each against a direct computation, its messages, its limits."""
from __future__ import annotations

import math

import numpy
import pytest
import torch

from apps.graphs.nodes.base import NodeError, registry


def run(ctx, type_key, raw_params=None, **inputs):
    node = registry()[type_key]
    params, problems = node.coerce_params(raw_params or {})
    assert problems == []
    return node().run(ctx, params, **inputs)


def steps(ctx):
    return {s["name"]: s for s in ctx.steps}


def vectors(n=6, d=4, seed=0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed))


# -- PositionalEncoding ------------------------------------------------------------------------

def reference_pe(seq, d):
    pe = torch.zeros(seq, d)
    for pos in range(seq):
        for col in range(d):
            angle = pos / 10000 ** ((col - col % 2) / d)
            pe[pos, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return pe


@pytest.mark.parametrize("d", [4, 5])
def test_sinusoidal_pe_is_the_transformer_formula_added_to_the_input(ctx, d):
    x = vectors(3, d)
    out = run(ctx, "PositionalEncoding", tensor=x)
    assert torch.allclose(out["pe"], reference_pe(3, d), atol=1e-5)
    assert torch.allclose(out["tensor"], x + out["pe"])
    assert out["tensor"].shape == x.shape and out["pe"].shape == (3, d)


def test_pe_broadcasts_over_the_batch_of_seq_batch_d(ctx):
    x = vectors(12, 1).reshape(3, 2, 2)
    out = run(ctx, "PositionalEncoding", tensor=x)
    assert out["pe"].shape == (3, 2)
    assert torch.allclose(out["tensor"], x + out["pe"].unsqueeze(1))


def test_learnable_pe_is_seeded_random_scaled_by_root_d(ctx):
    x = torch.zeros(3, 4)
    out = run(ctx, "PositionalEncoding", {"mode": "learnable", "seed": 7}, tensor=x)
    expected = torch.randn(3, 4, generator=torch.Generator().manual_seed(7)) / 2
    assert torch.equal(out["pe"], expected)
    assert torch.equal(run(ctx, "PositionalEncoding", {"mode": "learnable", "seed": 7}, tensor=x)["pe"], expected)
    assert not torch.equal(run(ctx, "PositionalEncoding", {"mode": "learnable", "seed": 8}, tensor=x)["pe"], expected)


def test_pe_steps(ctx):
    ctx.verbose = True
    out = run(ctx, "PositionalEncoding", tensor=vectors(3, 4))
    assert [s["name"] for s in ctx.steps] == ["input", "compute_pe", "add"]
    assert torch.equal(steps(ctx)["compute_pe"]["tensors"]["pe"], out["pe"])
    assert torch.equal(steps(ctx)["add"]["tensors"]["output"], out["tensor"])


def test_pe_refuses_a_sequence_past_max_len_and_bad_shapes(ctx):
    with pytest.raises(NodeError, match=r"seq_len=5 but max_len=4; raise max_len or shorten"):
        run(ctx, "PositionalEncoding", {"max_len": 4}, tensor=torch.zeros(5, 2))
    with pytest.raises(NodeError, match=r"expects \[seq, D\] or \[seq, batch, D\], but got shape \[4\]"):
        run(ctx, "PositionalEncoding", tensor=torch.zeros(4))
    _, problems = registry()["PositionalEncoding"].coerce_params({"max_len": 0})
    assert problems == ["'max_len' value 0 is below minimum 1"]


def test_pe_table_is_bounded(ctx):
    ctx.size_limit = 10
    with pytest.raises(NodeError, match="PositionalEncoding's table would need 12 elements"):
        run(ctx, "PositionalEncoding", tensor=torch.zeros(3, 4))


# -- EmbeddingScatter --------------------------------------------------------------------------

def normalised(points):
    centred = points - points.mean(axis=0, keepdims=True)
    return centred / numpy.abs(centred).max()


def test_scatter_pca_is_sklearns_projection_centred_and_scaled(ctx):
    from sklearn.decomposition import PCA

    x = vectors(6, 4)
    labels = list("abcdef")
    out = run(ctx, "EmbeddingScatter", embeddings=x, labels=labels)
    expected = normalised(PCA(n_components=2, random_state=42).fit_transform(x.double().numpy()))
    assert out["points_2d"].shape == (6, 2) and out["points_2d"].dtype == torch.float32
    assert numpy.allclose(out["points_2d"].numpy(), expected, atol=1e-5)
    assert out["labels"] == labels
    assert float(out["points_2d"].abs().max()) == pytest.approx(1.0)


def test_scatter_pca_is_the_same_every_run_and_labels_are_optional(ctx):
    x = vectors(5, 3)
    first = run(ctx, "EmbeddingScatter", embeddings=x)
    assert torch.equal(first["points_2d"], run(ctx, "EmbeddingScatter", embeddings=x)["points_2d"])
    assert first["labels"] == []


def test_scatter_pads_a_single_dimension_and_a_single_vector(ctx):
    out = run(ctx, "EmbeddingScatter", embeddings=torch.tensor([[1.0], [2.0], [4.0]]))
    assert out["points_2d"].shape == (3, 2) and torch.all(out["points_2d"][:, 1] == 0)
    single = run(ctx, "EmbeddingScatter", embeddings=torch.tensor([1.0, 2.0, 3.0]), labels=["x"])
    assert single["points_2d"].tolist() == [[0.0, 0.0]] and single["labels"] == ["x"]


def test_scatter_tsne_is_sklearns_seeded_layout(ctx):
    from sklearn.manifold import TSNE

    x = vectors(8, 4)
    out = run(ctx, "EmbeddingScatter", {"method": "t-SNE", "perplexity": 3.0, "seed": 1}, embeddings=x)
    expected = TSNE(n_components=2, perplexity=3.0, random_state=1, init="pca",
                    learning_rate="auto").fit_transform(x.double().numpy())
    assert numpy.allclose(out["points_2d"].numpy(), normalised(expected), atol=1e-4)


def test_scatter_tsne_lowers_perplexity_below_n_and_falls_back_to_pca_under_five(ctx):
    ctx.verbose = True
    run(ctx, "EmbeddingScatter", {"method": "t-SNE", "perplexity": 30.0}, embeddings=vectors(6, 3))
    assert steps(ctx)["tsne"]["scalars"] == {"perplexity": 5.0}
    assert "perplexity 30 must be below the number of vectors (6); 5 was used" in ctx.logs[-1]
    ctx.steps.clear()
    out = run(ctx, "EmbeddingScatter", {"method": "t-SNE"}, embeddings=vectors(4, 3))
    assert [s["name"] for s in ctx.steps] == ["input", "fallback", "pca", "normalize"]
    assert "PCA was used instead" in ctx.logs[-1]
    assert torch.equal(out["points_2d"], run(ctx, "EmbeddingScatter", embeddings=vectors(4, 3))["points_2d"])


def test_scatter_steps_follow_the_reference(ctx):
    ctx.verbose = True
    x = vectors(6, 4)
    out = run(ctx, "EmbeddingScatter", embeddings=x)
    assert [s["name"] for s in ctx.steps] == ["input", "pca", "normalize"]
    assert steps(ctx)["input"]["scalars"] == {"N": 6.0, "D": 4.0}
    from sklearn.decomposition import PCA
    pc1 = PCA(n_components=2).fit(x.double().numpy()).explained_variance_ratio_[0]
    assert steps(ctx)["pca"]["scalars"]["explained_variance_pc1"] == pytest.approx(pc1)
    assert torch.equal(steps(ctx)["normalize"]["tensors"]["points_2d"], out["points_2d"])


def test_scatter_bad_input_messages(ctx):
    with pytest.raises(NodeError, match=r"expects 'embeddings' as \[N, D\].*\[2, 2, 2\]"):
        run(ctx, "EmbeddingScatter", embeddings=torch.zeros(2, 2, 2))
    with pytest.raises(NodeError, match=r"at least one vector.*\[0, 16\]"):
        run(ctx, "EmbeddingScatter", embeddings=torch.zeros(0, 16))
    with pytest.raises(NodeError, match="'labels' has 2 labels but 'embeddings' has 3 vectors"):
        run(ctx, "EmbeddingScatter", embeddings=vectors(3, 2), labels=["a", "b"])
    with pytest.raises(NodeError, match="NaN or infinite"):
        run(ctx, "EmbeddingScatter", embeddings=torch.tensor([[1.0, math.nan], [0.0, 1.0]]))
    with pytest.raises(NodeError, match="needs a list of labels"):
        run(ctx, "EmbeddingScatter", embeddings=vectors(3, 2), labels="abc")


def test_scatter_is_bounded(ctx, monkeypatch):
    from apps.graphs.nodes.library import embeddings
    monkeypatch.setattr(embeddings, "TSNE_MAX_POINTS", 6)
    with pytest.raises(NodeError, match="t-SNE takes at most 6 vectors, but 'embeddings' has 7; use method PCA"):
        run(ctx, "EmbeddingScatter", {"method": "t-SNE"}, embeddings=vectors(7, 2))
    ctx.size_limit = 20
    with pytest.raises(NodeError, match="EmbeddingScatter's table would need 21 elements"):
        run(ctx, "EmbeddingScatter", embeddings=vectors(7, 3))
