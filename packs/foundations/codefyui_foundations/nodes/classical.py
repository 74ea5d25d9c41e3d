"""Classical machine learning written out by hand: k-nearest neighbours, linear and
logistic regression, each fitted with a few lines of tensor algebra."""
from __future__ import annotations

from collections import Counter

import torch
import torch.nn.functional as F

from apps.graphs.nodes.base import NodeError, Param, Port
from apps.graphs.nodes.library._helpers import (LibraryNode, as_float, class_labels,
                                                training_data, step)

CATEGORY = "Classical"

TRAINING_INPUTS = (
    Port("x_train", description="Training features [N, F]"),
    Port("y_train", "LIST", description="One label per training row"),
    Port("x_query", description="Features [M, F] to classify"),
)


class KNN(LibraryNode):
    type = "foundations:Edu-KNN"
    category = CATEGORY
    description = "Classifies each query point by a vote of its k nearest training points."
    details = (
        "k-nearest neighbours learns nothing in advance: to classify a query it measures the "
        "distance to every training point, keeps the 'k' closest, and lets their labels vote; "
        "the most common label wins (a tie goes to the label of the closer neighbour). "
        "'metric' chooses how distance is measured: euclidean (a straight line), manhattan "
        "(along the grid, like city blocks) or cosine (1 − the cosine of the angle between the "
        "vectors). With 10 training rows and 3 queries you get 3 predictions, the k distances "
        "of each, and the indices of the neighbours. k larger than the training set is cut "
        "down to its size."
    )
    inputs = TRAINING_INPUTS
    outputs = (
        Port("predictions", "LIST"), Port("distances"), Port("neighbor_indices", "LIST"),
        Port("train_coords"), Port("query_coords"), Port("train_labels", "LIST"),
    )
    params = (
        Param("k", "int", 5, "How many neighbours vote", min=1),
        Param("metric", "select", "euclidean", "How distance is measured",
              options=("euclidean", "manhattan", "cosine")),
    )
    records_steps = True

    def run(self, ctx, params, x_train, y_train, x_query):
        labels = class_labels(y_train, "y_train", "Edu-KNN")
        x_train, x_query = training_data("Edu-KNN", x_train, x_query, len(labels))
        metric, k = params["metric"], min(params["k"], x_train.shape[0])
        if metric == "cosine":
            distances = 1 - F.normalize(x_query, dim=-1) @ F.normalize(x_train, dim=-1).T
        else:
            gaps = x_query.unsqueeze(1) - x_train.unsqueeze(0)
            distances = gaps.norm(dim=-1) if metric == "euclidean" else gaps.abs().sum(dim=-1)
        formula = {"euclidean": r"$\lVert q - x \rVert_2$", "manhattan": r"$\sum_f |q_f - x_f|$",
                   "cosine": r"$1 - \cos(q, x)$"}[metric]
        step(ctx, "compute_distances", f"The {metric} distance {formula} from each of the "
             f"{x_query.shape[0]} queries (rows) to each of the {x_train.shape[0]} training "
             "points (columns).", distances=distances)
        nearest, indices = distances.topk(k, dim=1, largest=False)
        step(ctx, "topk", f"Keep the $k = {k}$ smallest distances of each query, closest first.",
             topk_distances=nearest, topk_indices=indices)
        neighbours = indices.tolist()
        predictions = [Counter(labels[j] for j in row).most_common(1)[0][0] for row in neighbours]
        step(ctx, "vote", "Each query takes the label most of its neighbours carry.",
             {"k": float(k), "n_classes": float(len(set(labels)))})
        return {"predictions": predictions, "distances": nearest, "neighbor_indices": neighbours,
                "train_coords": x_train, "query_coords": x_query, "train_labels": labels}


class LinearRegression(LibraryNode):
    type = "foundations:Edu-LinearRegression"
    category = CATEGORY
    description = "Fits a straight line (a flat plane) y = Xw + b through the training points."
    details = (
        "Linear regression looks for the weights w and the bias b that make Xw + b as close "
        "as possible to the targets y (the smallest mean squared error). 'closed_form' solves "
        "the normal equation $w = (X^TX + \\lambda I)^{-1}X^Ty$ in one go; 'gradient_descent' "
        "starts from zero and takes 'epochs' small steps of size 'lr' downhill. "
        "'regularization' (λ) pulls the weights towards zero (ridge regression); the bias is "
        "never pulled. x_train [N, F] and y_train [N] give F weights and one bias; x_query "
        "[M, F] gives M predictions."
    )
    inputs = (Port("x_train", description="Training features [N, F]"),
              Port("y_train", description="Targets [N] or [N, 1]"),
              Port("x_query", description="Features [M, F] to predict for"))
    outputs = (Port("predictions"), Port("weights"), Port("bias"))
    params = (
        Param("method", "select", "closed_form", "Solve in one go or step by step",
              options=("closed_form", "gradient_descent")),
        Param("lr", "float", 0.01, "Gradient descent step size", min=0.0),
        Param("epochs", "int", 100, "Gradient descent steps", min=1, max=100_000),
        Param("regularization", "float", 0.0, "L2 (ridge) strength λ", min=0.0),
    )
    records_steps = True

    def run(self, ctx, params, x_train, y_train, x_query):
        y = as_float(y_train).reshape(-1)
        x, query = training_data("Edu-LinearRegression", x_train, x_query)
        if y.shape[0] != x.shape[0]:
            raise NodeError(f"Edu-LinearRegression: x_train has {x.shape[0]} rows but y_train has "
                            f"{y.shape[0]} targets; give one target per row")
        lam, (n, n_features) = params["regularization"], x.shape
        if params["method"] == "closed_form":
            with_ones = torch.cat([x, x.new_ones(n, 1)], dim=1)
            penalty = lam * torch.eye(n_features + 1, device=x.device)
            penalty[-1, -1] = 0.0  # the bias is not regularised
            gram, target = with_ones.T @ with_ones + penalty, with_ones.T @ y
            theta = torch.linalg.lstsq(gram, target.unsqueeze(1)).solution.squeeze(1)
            weights, bias = theta[:n_features], theta[n_features]
            how = (r"the normal equation $(X^TX + \lambda I)\,\theta = X^Ty$, with a column of ones "
                   "for the bias")
        else:
            weights, bias = x.new_zeros(n_features), x.new_zeros(())
            for _ in range(params["epochs"]):
                error = x @ weights + bias - y
                weights = weights - params["lr"] * (2 / n * x.T @ error + 2 * lam * weights)
                bias = bias - params["lr"] * 2 / n * error.sum()
            how = (f"{params['epochs']} gradient-descent steps of size {params['lr']:g} on the "
                   r"mean squared error $\frac{1}{N}\sum_i (x_i w + b - y_i)^2$")
        step(ctx, "fit", f"Find $w$ and $b$ by {how}.",
             {"lambda": lam, "n_features": float(n_features)}, weights=weights, bias=bias)
        predictions = query @ weights + bias
        step(ctx, "predict", r"Predict for the queries: $\hat y = X_{query} w + b$.",
             predictions=predictions)
        return {"predictions": predictions, "weights": weights, "bias": bias}


class LogisticRegression(LibraryNode):
    type = "foundations:Edu-LogisticRegression"
    category = CATEGORY
    description = "A softmax classifier fitted by gradient descent on the cross-entropy loss."
    details = (
        "Each class c gets a column of weights and a bias; a row's score for c is "
        "$x \\cdot W_c + b_c$, and softmax turns the scores into probabilities that add up to "
        "1. Training starts from zero and, for 'epochs' steps of size 'lr', moves W and b to "
        "raise the probability of each row's true label (cross-entropy). Two classes or many "
        "use the same code. 'regularization' (λ) pulls the weights (not the biases) towards "
        "zero. The classes are the distinct labels in sorted order: column k of 'weights' and "
        "'probabilities' belongs to classes[k]; each prediction is the most probable class."
    )
    inputs = TRAINING_INPUTS
    outputs = (Port("predictions", "LIST"), Port("probabilities"), Port("weights"), Port("bias"),
               Port("classes", "LIST"))
    params = (
        Param("lr", "float", 0.1, "Gradient descent step size", min=0.0),
        Param("epochs", "int", 200, "Training steps", min=1, max=100_000),
        Param("regularization", "float", 0.0, "L2 weight decay strength λ", min=0.0),
    )
    records_steps = True

    def run(self, ctx, params, x_train, y_train, x_query):
        labels = class_labels(y_train, "y_train", "Edu-LogisticRegression")
        x, query = training_data("Edu-LogisticRegression", x_train, x_query, len(labels))
        classes = sorted(set(labels))
        if len(classes) < 2:
            raise NodeError(f"Edu-LogisticRegression needs at least 2 classes to tell apart, but "
                            f"y_train only holds {classes}")
        target = F.one_hot(torch.tensor([classes.index(v) for v in labels], device=x.device),
                           len(classes)).float()
        lr, lam, n = params["lr"], params["regularization"], x.shape[0]
        weights, bias = x.new_zeros(x.shape[1], len(classes)), x.new_zeros(len(classes))
        for _ in range(params["epochs"]):
            error = (x @ weights + bias).softmax(dim=1) - target
            weights = weights - lr * (x.T @ error / n + 2 * lam * weights)
            bias = bias - lr * error.sum(dim=0) / n
        step(ctx, "fit", f"{params['epochs']} gradient-descent steps of size {lr:g} on the "
             r"cross-entropy $-\frac{1}{N}\sum_i \log p_{i,y_i}$; "
             f"classes {', '.join(classes)}.",
             {"lr": lr, "epochs": float(params["epochs"]), "lambda": lam},
             weights=weights, bias=bias)
        logits = query @ weights + bias
        probabilities = logits.softmax(dim=1)
        step(ctx, "predict", r"Scores $z = X_{query} W + b$, probabilities "
             r"$p = \mathrm{softmax}(z)$; the most probable class is the prediction.",
             logits=logits, probabilities=probabilities)
        predictions = [classes[i] for i in probabilities.argmax(dim=1).tolist()]
        return {"predictions": predictions, "probabilities": probabilities, "weights": weights,
                "bias": bias, "classes": classes}
