"""A fitted scikit-learn classifier as a MODEL value (an ``nn.Module``), so one port type carries
it from a classifier node to the nodes that use a model: DecisionBoundary draws it, Inference
calls it. The contract those nodes rely on:

- ``model.scores(x)``: a numpy array [M, classes] (probabilities where the estimator has them,
  else its decision function; the columns follow ``model.classes``)
- ``model.predict(x)``: a list of M labels as strings
- ``model.classes``: the sorted class labels
- ``model.support_vectors``: numpy [n_sv, F] for a support vector machine, else None
- calling the module on a tensor gives ``scores`` as a float32 tensor
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn


class FittedEstimator(nn.Module):
    """A fitted scikit-learn classifier. ``one_hot`` marks a regression fitted to one-hot
    targets, whose predictions are scores per class."""

    def __init__(self, estimator: Any, classes: list[str], one_hot: bool = False):
        super().__init__()
        self.estimator, self.classes, self.one_hot = estimator, list(classes), one_hot
        self.support_vectors = getattr(estimator, "support_vectors_", None)

    def scores(self, x: Any) -> np.ndarray:
        rows = _rows(x)
        if self.one_hot:
            return np.atleast_2d(self.estimator.predict(rows))
        if hasattr(self.estimator, "predict_proba"):
            return self.estimator.predict_proba(rows)
        scores = np.asarray(self.estimator.decision_function(rows))
        if scores.ndim == 1:  # two classes: one signed score, > 0 for the second class
            scores = np.stack([-scores, scores], axis=1)
        return scores

    def predict(self, x: Any) -> list[str]:
        if self.one_hot:
            return [self.classes[i] for i in self.scores(x).argmax(axis=1)]
        return [str(label) for label in self.estimator.predict(_rows(x))]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(self.scores(x), dtype=torch.float32, device=x.device)


def _rows(x: Any) -> np.ndarray:
    """A feature table (tensor, array or nested list) as the float array scikit-learn takes."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().float().numpy()
    return np.asarray(x, dtype=float)
