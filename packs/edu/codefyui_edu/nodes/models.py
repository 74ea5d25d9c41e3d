"""Fitted classifiers as MODEL values (``nn.Module``s): calling one gives class scores,
``predict`` gives labels, ``classes`` names the score columns."""
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
        return np.atleast_2d(self.estimator.decision_function(rows))

    def predict(self, x: Any) -> list[str]:
        if self.one_hot:
            return [self.classes[i] for i in self.scores(x).argmax(axis=1)]
        return [str(label) for label in self.estimator.predict(_rows(x))]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(self.scores(x), dtype=torch.float32, device=x.device)


class TrainedNetwork(nn.Module):
    """A trained network whose outputs are one score per class."""

    def __init__(self, net: nn.Module, classes: list[str]):
        super().__init__()
        self.net, self.classes = net, list(classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def predict(self, x: Any) -> list[str]:
        with torch.no_grad():
            scores = self.net(torch.as_tensor(_rows(x), dtype=torch.float32))
        return [self.classes[i] for i in scores.argmax(dim=1).tolist()]


def _rows(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().float().numpy()
    return np.asarray(x, dtype=float)
