"""The Foundations pack's nodes against direct computations, and their step traces."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsClassifier

from apps.graphs.nodes.base import NodeError, registry

from .conftest import randn, run, step, steps

MARKS = torch.tensor([[72., 85, 64], [90, 78, 88], [65, 92, 70], [81, 60, 95], [77, 88, 59]])


# -- Edu-ColumnStats ------------------------------------------------------------------------

@pytest.mark.parametrize("unbiased", [False, True])
def test_column_stats_match_numpy(ctx, unbiased):
    out = run(ctx, "foundations:Edu-ColumnStats", {"unbiased": unbiased}, table=MARKS)
    table = MARKS.numpy()
    assert np.allclose(out["means"], table.mean(axis=0))
    assert np.allclose(out["stds"], table.std(axis=0, ddof=1 if unbiased else 0))
    assert out["mins"].tolist() == table.min(axis=0).tolist()
    assert out["maxs"].tolist() == table.max(axis=0).tolist()
    assert out["counts"].tolist() == [5.0, 5.0, 5.0]


def test_column_stats_steps_show_the_population_std(verbose):
    """TR1: Edu-ColumnStats shows the population std as sum → divide → deviations² → variance → sqrt."""
    run(verbose, "foundations:Edu-ColumnStats", table=MARKS)
    assert steps(verbose) == [
        ("input", ["table"], ["columns", "rows"]),
        ("col_sum", ["col_sum"], []),
        ("means", ["counts", "means"], []),
        ("deviations", ["deviations"], []),
        ("stds", ["squared", "stds", "variances"], ["denominator"]),
        ("range", ["maxs", "mins"], []),
    ]
    assert step(verbose, "input")["scalars"] == {"rows": 5.0, "columns": 3.0}
    assert step(verbose, "col_sum")["tensors"]["col_sum"].tolist() == MARKS.sum(0).tolist()
    stds = step(verbose, "stds")
    assert stds["scalars"] == {"denominator": 5.0}
    assert torch.allclose(stds["tensors"]["squared"], (MARKS - MARKS.mean(0)) ** 2)
    assert torch.allclose(stds["tensors"]["stds"], stds["tensors"]["variances"].sqrt())


def test_column_stats_without_verbose_records_nothing(ctx):
    run(ctx, "foundations:Edu-ColumnStats", table=MARKS)
    assert ctx.steps == []


def test_column_stats_refuses_a_table_that_is_not_2d(ctx):
    with pytest.raises(NodeError, match=r"Edu-ColumnStats expects a 2-D tensor \[rows, columns\]"):
        run(ctx, "foundations:Edu-ColumnStats", table=torch.ones(2, 3, 4))


# -- Edu-KNN -------------------------------------------------------------------------------

TRAIN = torch.tensor([[1.0, 1.2], [1.5, 0.8], [0.7, 1.6], [1.2, 1.9], [4.0, 4.2], [4.6, 3.7],
                      [3.8, 4.9], [5.1, 4.4]])
LABELS = ["a", "a", "a", "a", "b", "b", "b", "b"]
QUERY = torch.tensor([[1.1, 1.4], [4.4, 4.1], [2.8, 2.6]])


@pytest.mark.parametrize("metric,scipy_metric", [("euclidean", "euclidean"),
                                                 ("manhattan", "cityblock"), ("cosine", "cosine")])
def test_knn_matches_scipy_distances_and_sklearn_votes(ctx, metric, scipy_metric):
    out = run(ctx, "foundations:Edu-KNN", {"k": 3, "metric": metric},
              x_train=TRAIN, y_train=LABELS, x_query=QUERY)
    distances = np.sort(cdist(QUERY.numpy(), TRAIN.numpy(), scipy_metric), axis=1)[:, :3]
    assert np.allclose(out["distances"], distances, atol=1e-5)
    sklearn = KNeighborsClassifier(3, metric=scipy_metric, algorithm="brute").fit(TRAIN, LABELS)
    assert out["predictions"] == sklearn.predict(QUERY).tolist()
    assert out["train_labels"] == LABELS and torch.equal(out["query_coords"], QUERY)


def test_knn_steps_and_k_larger_than_the_training_set(verbose):
    out = run(verbose, "foundations:Edu-KNN", {"k": 50}, x_train=TRAIN, y_train=LABELS,
              x_query=QUERY)
    assert [len(row) for row in out["neighbor_indices"]] == [8, 8, 8]
    assert steps(verbose) == [("compute_distances", ["distances"], []),
                              ("topk", ["topk_distances", "topk_indices"], []),
                              ("vote", [], ["k", "n_classes"])]
    assert step(verbose, "compute_distances")["tensors"]["distances"].shape == (3, 8)
    assert step(verbose, "vote")["scalars"] == {"k": 8.0, "n_classes": 2.0}


def test_knn_takes_labels_as_a_tensor_of_class_numbers(ctx):
    out = run(ctx, "foundations:Edu-KNN", {"k": 1}, x_train=TRAIN,
              y_train=torch.tensor([0., 0, 0, 0, 1, 1, 1, 1]), x_query=QUERY[:2])
    assert out["predictions"] == ["0", "1"]


def test_knn_refuses_a_label_count_that_does_not_match(ctx):
    with pytest.raises(NodeError, match="x_train has 8 rows but y_train has 3 labels"):
        run(ctx, "foundations:Edu-KNN", x_train=TRAIN, y_train=["a", "b", "a"], x_query=QUERY)


# -- Edu-LinearRegression -------------------------------------------------------------------

X = randn(12, 3, seed=1)
Y = X @ torch.tensor([2.0, -1.0, 0.5]) + 3.0 + 0.1 * randn(12, seed=2)


@pytest.mark.parametrize("lam", [0.0, 0.7])
def test_linear_regression_closed_form_matches_ridge(ctx, lam):
    out = run(ctx, "foundations:Edu-LinearRegression", {"regularization": lam},
              x_train=X, y_train=Y, x_query=X[:4])
    ridge = Ridge(alpha=lam, solver="cholesky").fit(X.double(), Y.double())
    assert np.allclose(out["weights"], ridge.coef_, atol=1e-4)
    assert out["bias"].item() == pytest.approx(ridge.intercept_, abs=1e-4)
    assert np.allclose(out["predictions"], ridge.predict(X[:4].double()), atol=1e-4)


def test_linear_regression_gradient_descent_follows_the_update_rule(ctx):
    out = run(ctx, "foundations:Edu-LinearRegression",
              {"method": "gradient_descent", "lr": 0.1, "epochs": 3}, x_train=X, y_train=Y,
              x_query=X)
    w, b = np.zeros(3), 0.0
    x, y = X.double().numpy(), Y.double().numpy()
    for _ in range(3):
        error = x @ w + b - y
        w, b = w - 0.1 * 2 / 12 * x.T @ error, b - 0.1 * 2 / 12 * error.sum()
    assert np.allclose(out["weights"], w, atol=1e-5)
    assert out["bias"].item() == pytest.approx(b, abs=1e-5)


def test_linear_regression_steps(verbose):
    run(verbose, "foundations:Edu-LinearRegression", x_train=X, y_train=Y, x_query=X[:2])
    assert steps(verbose) == [("fit", ["bias", "weights"], ["lambda", "n_features"]),
                              ("predict", ["predictions"], [])]
    assert step(verbose, "fit")["scalars"] == {"lambda": 0.0, "n_features": 3.0}


# -- Edu-LogisticRegression -----------------------------------------------------------------

def test_logistic_regression_matches_a_direct_gradient_descent(ctx):
    out = run(ctx, "foundations:Edu-LogisticRegression", {"epochs": 50, "regularization": 0.01},
              x_train=TRAIN, y_train=LABELS, x_query=QUERY)
    x, target = TRAIN.double().numpy(), np.eye(2)[[0, 0, 0, 0, 1, 1, 1, 1]]
    w, b = np.zeros((2, 2)), np.zeros(2)
    for _ in range(50):
        z = x @ w + b
        p = np.exp(z - z.max(1, keepdims=True))
        error = p / p.sum(1, keepdims=True) - target
        w, b = w - 0.1 * (x.T @ error / 8 + 2 * 0.01 * w), b - 0.1 * error.sum(0) / 8
    assert np.allclose(out["weights"], w, atol=1e-5) and np.allclose(out["bias"], b, atol=1e-5)
    z = QUERY.double().numpy() @ w + b
    assert np.allclose(out["probabilities"], np.exp(z) / np.exp(z).sum(1, keepdims=True), atol=1e-5)
    assert out["classes"] == ["a", "b"] and out["predictions"][:2] == ["a", "b"]


def test_logistic_regression_steps_and_one_class_refused(verbose):
    run(verbose, "foundations:Edu-LogisticRegression", x_train=TRAIN, y_train=LABELS, x_query=QUERY)
    assert steps(verbose) == [("fit", ["bias", "weights"], ["epochs", "lambda", "lr"]),
                              ("predict", ["logits", "probabilities"], [])]
    with pytest.raises(NodeError, match="needs at least 2 classes"):
        run(verbose, "foundations:Edu-LogisticRegression", x_train=TRAIN, y_train=["a"] * 8,
            x_query=QUERY)


# -- Edu-FFN ---------------------------------------------------------------------------------

def test_ffn_matches_its_formula_and_codefyui_seeded_weights(verbose):
    x = randn(4, 8, seed=3)
    built = []
    verbose.module = lambda build: built.append(build()) or built[-1]
    out = run(verbose, "foundations:Edu-FFN", {"activation": "gelu"}, tensor=x)
    block = built[0]
    generator = torch.Generator().manual_seed(42)
    assert torch.equal(block.fc1.weight, torch.randn(16, 8, generator=generator) * (1 / math.sqrt(8)))
    assert torch.equal(block.fc2.weight, torch.randn(8, 16, generator=generator) * 0.25)
    assert not block.fc1.bias.any() and not block.fc2.bias.any()
    hidden = torch.nn.functional.gelu(x @ block.fc1.weight.T)
    assert torch.allclose(out["activations"], hidden)
    assert torch.allclose(out["tensor"], hidden @ block.fc2.weight.T)
    assert steps(verbose) == [("input", ["tensor"], []), ("linear1", ["hidden"], []),
                              ("activation", ["activations"], []), ("linear2", ["output"], [])]


def test_ffn_refuses_a_width_mismatch(ctx):
    with pytest.raises(NodeError, match=r"embed_dim=8, but the input has shape \[2, 5\]"):
        run(ctx, "foundations:Edu-FFN", tensor=torch.ones(2, 5))


# -- Edu-TokenEmbedding ----------------------------------------------------------------------

def table(vocab=32, dim=8, seed=42):
    return torch.randn(vocab, dim, generator=torch.Generator().manual_seed(seed)) / math.sqrt(dim)


def fnv1a(word: str) -> int:
    h = 2166136261
    for byte in word.encode():
        h = (h ^ byte) * 16777619 % 2**32
    return h


def test_token_embedding_hash_mode_looks_up_stable_rows(verbose):
    words = ["the", "cat", "sat", "the"]
    out = run(verbose, "foundations:Edu-TokenEmbedding", tokens=words)
    rows = [fnv1a(w) % 32 for w in words]
    assert torch.equal(out["embeddings"], table()[rows])
    assert out["vocab"] == ["the", "cat", "sat"]
    assert steps(verbose) == [("input_tokens", [], ["embed_dim", "seq_len", "vocab_size"]),
                              ("embedding_table", ["table"], []), ("lookup", ["embeddings"], [])]
    assert step(verbose, "input_tokens")["scalars"] == {"seq_len": 4.0, "embed_dim": 8.0,
                                                        "vocab_size": 32.0}


def test_token_embedding_ordinal_mode_and_ids(ctx):
    out = run(ctx, "foundations:Edu-TokenEmbedding", {"mode": "ordinal", "vocab_size": 4},
              tokens=["b", "a", "b", "c"])
    assert torch.equal(out["embeddings"], table(4)[[0, 1, 0, 2]])
    ids = run(ctx, "foundations:Edu-TokenEmbedding", token_ids=torch.tensor([5, 37, 5]))
    assert torch.equal(ids["embeddings"], table()[[5, 5, 5]])
    assert ids["vocab"] == ["<id:5>", "<id:37>"]


def test_token_embedding_needs_an_input(ctx):
    with pytest.raises(NodeError, match="needs 'tokens' or 'token_ids' wired in"):
        run(ctx, "foundations:Edu-TokenEmbedding")


# -- params ----------------------------------------------------------------------------------

@pytest.mark.parametrize("type_key,raw,message", [
    ("foundations:Edu-KNN", {"k": 0}, "'k' value 0 is below minimum 1"),
    ("foundations:Edu-KNN", {"metric": "chebyshev"}, "'metric' must be one of euclidean, manhattan, cosine"),
    ("foundations:Edu-LinearRegression", {"epochs": 10**9}, "'epochs' value 1000000000 is above maximum 100000"),
    ("foundations:Edu-FFN", {"activation": "tanh"}, "'activation' must be one of relu, gelu"),
    ("foundations:Edu-TokenEmbedding", {"vocab_size": "many"}, "'vocab_size' must be a number"),
])
def test_bad_params_are_named(type_key, raw, message):
    _, problems = registry()[type_key].coerce_params(raw)
    assert problems and problems[0].startswith(message)
