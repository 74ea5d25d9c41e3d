"""Fitted classifiers as MODEL values (``nn.Module``s): calling one gives class scores,
``predict`` gives labels, ``classes`` names the score columns."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from apps.graphs.nodes.library._estimators import FittedEstimator, _rows

__all__ = ["FittedEstimator", "TrainedNetwork"]


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

