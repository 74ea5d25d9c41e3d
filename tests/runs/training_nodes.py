"""Test-only nodes that make a tiny model and a TensorDataset loader, so the training nodes can
be run through the engine and the run workers without the model and data nodes of other
branches. No Django here: the workers import this module when a planned node names it."""
from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from apps.graphs.nodes.base import Node, Param, Port, register


@register
class TinyNet(Node):
    type = "test:TinyNet"
    category = "Training"
    outputs = (Port("model", "MODEL"),)
    stateful = True

    def run(self, ctx, params):
        def build():
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(ctx.seed if ctx.seed is not None else 0)
                return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        return {"model": ctx.module(build)}


@register
class TinyLoader(Node):
    type = "test:TinyLoader"
    category = "Data"
    outputs = (Port("dataloader", "DATALOADER"),)
    params = (Param("n", "int", 32), Param("batch_size", "int", 8))
    cacheable = False

    def run(self, ctx, params):
        x = torch.randn(params["n"], 4, generator=torch.Generator().manual_seed(0))
        data = TensorDataset(x, (x[:, 0] > 0).long())
        return {"dataloader": DataLoader(data, batch_size=params["batch_size"], shuffle=True, generator=ctx.generator())}


def training_graph(epochs: int = 3, n: int = 32, lr: float = 0.1, batch_size: int = 8, **loop) -> dict:
    """Start -> TinyNet -> Optimizer, TinyLoader and Loss -> TrainingLoop."""
    def node(id_, type_, x, **params):
        return {"id": id_, "type": type_, "position": {"x": x, "y": 0}, "data": {"params": params}}

    def edge(source, port, target, handle):
        return {"id": f"{source}-{target}-{handle}", "source": source, "sourceHandle": port,
                "target": target, "targetHandle": handle}

    return {"name": "training", "nodes": [
        node("start", "Start", 0), node("model", "test:TinyNet", 200), node("data", "test:TinyLoader", 200, n=n, batch_size=batch_size),
        node("opt", "Optimizer", 400, type="SGD", lr=lr), node("loss", "Loss", 400),
        node("train", "TrainingLoop", 600, epochs=epochs, **loop)],
        "edges": [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "model",
                   "targetHandle": ""},
                  edge("model", "model", "opt", "model"), edge("model", "model", "train", "model"),
                  edge("data", "dataloader", "train", "dataloader"), edge("opt", "optimizer", "train", "optimizer"),
                  edge("loss", "loss_fn", "train", "loss_fn")]}
