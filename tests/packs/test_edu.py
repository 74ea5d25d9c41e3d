"""The Classroom pack's nodes against direct computations (numpy, scipy, scikit-learn)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.signal import correlate2d
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier
from torch import nn

from apps.graphs.nodes.base import NodeError, registry

from .conftest import randn, run, step, steps

CLASS = torch.tensor([[1., 72, 85], [2, 90, 78], [3, 65, 92], [4, 81, 60], [5, 77, 88]])


# -- FilterRows -----------------------------------------------------------------------------

@pytest.mark.parametrize("op,test", [(">", np.greater), (">=", np.greater_equal), ("<", np.less),
                                     ("<=", np.less_equal), ("==", np.equal), ("!=", np.not_equal)])
def test_filter_rows_matches_numpy(ctx, op, test):
    out = run(ctx, "edu:FilterRows", {"column_index": 1, "op": op, "threshold": 77},
              table=CLASS)
    keep = test(CLASS.numpy()[:, 1], 77)
    assert out["tensor"].tolist() == CLASS.numpy()[keep].tolist()
    assert out["mask"].tolist() == keep.tolist() and out["count"] == int(keep.sum())


def test_filter_rows_steps(verbose):
    run(verbose, "edu:FilterRows", {"column_index": 2, "threshold": 80}, table=CLASS)
    assert steps(verbose) == [("input", ["table"], ["columns", "rows"]),
                              ("pick_column", ["column"], []), ("compare", ["mask"], []),
                              ("count", [], ["count"]), ("index", ["filtered"], [])]
    assert step(verbose, "compare")["tensors"]["mask"].tolist() == [1.0, 0.0, 1.0, 0.0, 1.0]
    assert step(verbose, "count")["scalars"] == {"count": 3.0}


def test_filter_rows_by_name_needs_the_columns(ctx):
    out = run(ctx, "edu:FilterRows", {"column_name": "english", "threshold": 86}, table=CLASS,
              columns=["id", "maths", "english"])
    assert out["tensor"][:, 0].tolist() == [3.0, 5.0]
    with pytest.raises(NodeError, match="'column_name' is set but no 'columns' input is wired"):
        run(ctx, "edu:FilterRows", {"column_name": "english"}, table=CLASS)
    with pytest.raises(NodeError, match="no column named 'art'; the columns are id, maths, english"):
        run(ctx, "edu:FilterRows", {"column_name": "art"}, table=CLASS,
            columns=["id", "maths", "english"])
    with pytest.raises(NodeError, match="'column_index' = 3 is out of range .* use 0 to 2"):
        run(ctx, "edu:FilterRows", {"column_index": 3}, table=CLASS)


# -- SlidingWindow2D ------------------------------------------------------------------------

@pytest.mark.parametrize("preset", ["Blur3x3", "EdgeDetection3x3", "Sharpen3x3", "VerticalEdge3x3"])
def test_sliding_window_is_a_cross_correlation_per_channel(ctx, preset):
    from codefyui_edu.nodes.images import KERNELS

    image = randn(2, 6, 7)
    out = run(ctx, "edu:SlidingWindow2D", {"preset": preset}, image=image)
    kernel = np.array(KERNELS[preset])
    expected = [correlate2d(channel, kernel, mode="valid") for channel in image.double().numpy()]
    assert out["image"].shape == (2, 4, 5)
    assert np.allclose(out["image"], expected, atol=1e-5)


def test_sliding_window_custom_kernel_and_padding(ctx):
    image = randn(5, 5)
    out = run(ctx, "edu:SlidingWindow2D", {"preset": "Custom", "kernel_size": 2,
                                          "weights": [[1, 2], [3, 4]], "padding": 1}, image=image)
    padded = np.pad(image.numpy(), 1)
    assert out["image"].shape == (6, 6)
    assert np.allclose(out["image"], correlate2d(padded, [[1, 2], [3, 4]], mode="valid"), atol=1e-5)


def test_sliding_window_custom_weights_must_fill_the_kernel(ctx):
    with pytest.raises(NodeError, match="'weights' has 9 numbers, but kernel_size=2 needs 4"):
        run(ctx, "edu:SlidingWindow2D", {"preset": "Custom", "kernel_size": 2}, image=randn(5, 5))


# -- Classifier and AdvancedClassifier ------------------------------------------------------

ANGLES = torch.arange(16) * (2 * math.pi / 16)
POINTS = torch.cat([0.4 * randn(8, 2, seed=1),
                    torch.stack([2.5 * ANGLES.cos(), 2.5 * ANGLES.sin()], dim=1)])
NAMES = ["centre"] * 8 + ["ring"] * 16
ASK = torch.tensor([[0.0, 0.1], [2.4, 0.4], [-1.8, -1.7]])


@pytest.mark.parametrize("kind", ["knn", "logistic"])
def test_classifier_matches_scikit_learn(ctx, kind):
    out = run(ctx, "edu:Classifier", {"kind": kind, "n_neighbors": 3}, x_train=POINTS,
              y_train=NAMES, x_query=ASK)
    model = (KNeighborsClassifier(3) if kind == "knn" else LogisticRegression(max_iter=1000))
    model.fit(POINTS.numpy(), NAMES)
    assert out["predictions"] == model.predict(ASK.numpy()).tolist()
    assert np.allclose(out["probabilities"], model.predict_proba(ASK.numpy()), atol=1e-6)
    assert out["classes"] == ["centre", "ring"]


def test_classifier_linear_kind_scores_one_hot_targets(ctx):
    out = run(ctx, "edu:Classifier", {"kind": "linear"}, x_train=POINTS, y_train=NAMES,
              x_query=ASK)
    scores = LinearRegression().fit(POINTS.numpy(), np.eye(2)[[0] * 8 + [1] * 16]).predict(ASK.numpy())
    assert np.allclose(out["probabilities"], scores, atol=1e-5)
    assert out["predictions"] == [["centre", "ring"][i] for i in scores.argmax(axis=1)]


def test_classifier_model_is_a_module_that_predicts(ctx):
    model = run(ctx, "edu:Classifier", x_train=POINTS, y_train=NAMES, x_query=ASK)["model"]
    assert isinstance(model, nn.Module) and model.classes == ["centre", "ring"]
    assert model.predict(ASK) == run(ctx, "edu:Classifier", x_train=POINTS, y_train=NAMES,
                                     x_query=ASK)["predictions"]
    assert model(ASK).shape == (3, 2)


@pytest.mark.parametrize("raw,estimator", [
    ({"kind": "SVM", "kernel": "rbf"}, SVC(kernel="rbf")),
    ({"kind": "SVM", "kernel": "linear"}, SVC(kernel="linear")),
    ({"kind": "Decision Tree", "max_depth": 2}, DecisionTreeClassifier(max_depth=2, random_state=0)),
])
def test_advanced_classifier_matches_scikit_learn(ctx, raw, estimator):
    out = run(ctx, "edu:AdvancedClassifier", raw, x_train=POINTS, y_train=NAMES, x_query=ASK)
    assert out["predictions"] == estimator.fit(POINTS.numpy(), NAMES).predict(ASK.numpy()).tolist()


def test_advanced_classifier_svm_model_carries_its_support_vectors(ctx):
    model = run(ctx, "edu:AdvancedClassifier", x_train=POINTS, y_train=NAMES, x_query=ASK)["model"]
    assert isinstance(model, nn.Module) and model.support_vectors.shape[1] == 2


def test_a_single_class_is_explained(ctx):
    with pytest.raises(NodeError, match="edu:AdvancedClassifier failed: .*class"):
        run(ctx, "edu:AdvancedClassifier", x_train=POINTS, y_train=["ring"] * 24, x_query=ASK)


# -- FFNLayer, ActivationLayer, TrainAndEvaluate ---------------------------------------------

def build(ctx, *blocks):
    model = None
    for type_key, raw in blocks:
        model = run(ctx, type_key, raw, model=model)["model"]
    return model


def test_layers_chain_into_a_network_and_infer_their_inputs(ctx):
    net = build(ctx, ("edu:FFNLayer", {"in_features": 2, "out_features": 8}),
                ("edu:ActivationLayer", {"function": "tanh"}),
                ("edu:FFNLayer", {"in_features": 99, "out_features": 4}))
    assert [type(m).__name__ for m in net] == ["Linear", "Tanh", "Linear"]
    assert (net[2].in_features, net[2].out_features) == (8, 4)
    assert sum(p.numel() for p in net[0].parameters()) == 8 * 2 + 8


def test_activation_layer_needs_a_network(ctx):
    with pytest.raises(NodeError, match="ActivationLayer needs a network on 'model'"):
        run(ctx, "edu:ActivationLayer", model=None)


def test_train_and_evaluate_learns_the_ring_and_leaves_its_input_alone(ctx):
    ctx.seed = 7
    net = build(ctx, ("edu:FFNLayer", {"out_features": 16}), ("edu:ActivationLayer", {}))
    before = [p.clone() for p in net.parameters()]
    out = run(ctx, "edu:TrainAndEvaluate", {"epochs": 150}, model=net, x_train=POINTS,
              y_train=NAMES, x_query=ASK)
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters()))
    assert out["losses"].shape == (150,) and out["losses"][-1] < 0.2 * out["losses"][0]
    assert out["predictions"] == ["centre", "ring", "ring"]
    assert isinstance(out["model"], nn.Module) and out["model"](ASK).shape == (3, 2)


def test_train_and_evaluate_is_repeatable_in_a_seeded_run(ctx):
    ctx.seed = 11
    losses = [run(ctx, "edu:TrainAndEvaluate", {"epochs": 5},
                  model=build(ctx, ("edu:FFNLayer", {})), x_train=POINTS, y_train=NAMES,
                  x_query=ASK)["losses"] for _ in range(2)]
    assert torch.equal(*losses)


def test_train_and_evaluate_reports_its_epochs_as_training_loop_does(ctx):
    """Its card's bar ("Epoch 5/5") and the Training pane read what it reports, as TrainingLoop's."""
    from apps.inspector.training import summary
    from apps.runs.status import progress_line
    assert registry()["edu:TrainAndEvaluate"].reports_training
    out = run(ctx, "edu:TrainAndEvaluate", {"epochs": 5}, model=build(ctx, ("edu:FFNLayer", {})),
              x_train=POINTS, y_train=NAMES, x_query=ASK)
    last = ctx.reports[-1]
    assert progress_line(last) == {"text": "Epoch 5/5", "value": 4, "max": 5}
    assert last["losses"] == [round(x, 6) for x in out["losses"].tolist()] and last["config"]["optimizer"] == "Adam"
    assert summary(last)["epochs"] == 5 and last["best_epoch"] == 1 + int(out["losses"].argmin())
    assert len(ctx.reports) < 5   # at most one report a quarter-second, and the last epoch's


def test_train_and_evaluate_stops_between_epochs_and_answers_with_what_it_learnt(ctx):
    ctx.stop_after = 3
    out = run(ctx, "edu:TrainAndEvaluate", {"epochs": 50}, model=build(ctx, ("edu:FFNLayer", {})),
              x_train=POINTS, y_train=NAMES, x_query=ASK)
    assert out["losses"].shape == (3,) and len(out["predictions"]) == 3
    assert ctx.reports[-1]["epoch"] == 3 and "stopped after 3 of 50 epochs" in ctx.logs[-1]


def test_train_and_evaluate_explains_a_feature_mismatch(ctx):
    net = build(ctx, ("edu:FFNLayer", {"in_features": 3}))
    with pytest.raises(NodeError, match=r"first FFNLayer takes 3 features, but x_train \[24, 2\]"):
        run(ctx, "edu:TrainAndEvaluate", model=net, x_train=POINTS, y_train=NAMES, x_query=ASK)


# -- SentenceEmbedding ----------------------------------------------------------------------

def test_sentence_embedding_loads_but_refuses_to_run_offline(ctx):
    node = registry()["edu:SentenceEmbedding"]
    assert node.description.startswith("Not available offline")
    with pytest.raises(NodeError, match="not available on this server: it needs the pretrained "
                                        "model minishlab/potion-multilingual-128M"):
        run(ctx, "edu:SentenceEmbedding", text="I like cats")


@pytest.mark.parametrize("type_key,raw,message", [
    ("edu:FilterRows", {"op": "=>"}, "'op' must be one of >, >=, <, <=, ==, !="),
    ("edu:SlidingWindow2D", {"kernel_size": 16}, "'kernel_size' value 16 is above maximum 15"),
    ("edu:AdvancedClassifier", {"n_estimators": 0}, "'n_estimators' value 0 is below minimum 1"),
    ("edu:TrainAndEvaluate", {"lr": -1}, "'lr' value -1.0 is below minimum 0"),
])
def test_bad_params_are_named(type_key, raw, message):
    _, problems = registry()[type_key].coerce_params(raw)
    assert problems and problems[0].startswith(message)


def test_fitted_models_cross_to_the_server_and_into_captures(ctx):
    """A run worker pickles outputs to the server, and the capture store deep-copies modules."""
    import copy
    import pickle

    fitted = run(ctx, "edu:Classifier", x_train=POINTS, y_train=NAMES, x_query=ASK)["model"]
    trained = run(ctx, "edu:TrainAndEvaluate", {"epochs": 3}, model=build(ctx, ("edu:FFNLayer", {})),
                  x_train=POINTS, y_train=NAMES, x_query=ASK)["model"]
    for model in (fitted, trained):
        for twin in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
            assert twin.predict(ASK) == model.predict(ASK)
