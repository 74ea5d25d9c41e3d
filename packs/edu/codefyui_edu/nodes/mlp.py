"""A network built one layer at a time (FFNLayer, ActivationLayer), then trained and asked."""
from __future__ import annotations

import copy
import time

import torch
from torch import nn

from apps.graphs.nodes.base import NodeError, Param, Port
from apps.graphs.nodes.library._helpers import (LibraryNode, class_labels, seeded, shape_str,
                                                training_data)
from apps.graphs.nodes.library.training import _reported

from .models import TrainedNetwork

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "identity": nn.Identity}


def layers_of(model: nn.Module | None) -> list[nn.Module]:
    """The layers of the network being assembled (a Sequential's, or the model as one)."""
    if model is None:
        return []
    return list(model.children()) if isinstance(model, nn.Sequential) else [model]


def linears(layers: list[nn.Module]) -> list[nn.Linear]:
    return [m for layer in layers for m in layer.modules() if isinstance(m, nn.Linear)]


def fresh_linear(ctx, n_in: int, n_out: int, what: str) -> nn.Linear:
    """A new Linear layer, drawn from the run's seed for this node when the run is seeded."""
    ctx.check_size(n_in * n_out + n_out, what)
    return seeded(ctx.seed, lambda: nn.Linear(n_in, n_out)).to(ctx.device)


def model_input(model, node: str) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise NodeError(f"{node} needs a network on 'model': wire it after an FFNLayer")
    return model


class FFNLayer(LibraryNode):
    type = "edu:FFNLayer"
    category = "EDU"
    description = "Adds a fully connected layer to the network being built, one block at a time."
    details = (
        "A multi-layer network is built by chaining blocks: each FFNLayer adds a Linear "
        "layer with 'out_features' outputs to the end of the network that arrives on 'model' "
        "and passes the longer network on. Its number of inputs is the previous layer's "
        "number of outputs; only the first FFNLayer (with nothing wired into 'model') uses "
        "'in_features' (2 for points on a plane). A layer from 2 to 16 has 16 × 2 weights "
        "plus 16 biases = 48 parameters. Put an ActivationLayer between two FFNLayers so the "
        "network can bend, and finish with TrainAndEvaluate, which adds the output layer and "
        "trains it all. The weights start random (the same every run when the graph has a "
        "seed)."
    )
    inputs = (Port("model", "MODEL", optional=True, description="The network so far"),)
    outputs = (Port("model", "MODEL"),)
    params = (
        Param("in_features", "int", 2, "Inputs of the first layer (ignored after another layer)",
              min=1),
        Param("out_features", "int", 16, "Outputs of this layer (its hidden size)", min=1),
    )
    uses_rng = True

    def run(self, ctx, params, model=None):
        layers = layers_of(model)
        before = linears(layers)
        n_in = before[-1].out_features if before else params["in_features"]
        layer = fresh_linear(ctx, n_in, params["out_features"], "FFNLayer weights")
        return {"model": nn.Sequential(*layers, layer)}


class ActivationLayer(LibraryNode):
    type = "edu:ActivationLayer"
    category = "EDU"
    description = "Adds an activation (a bend) between the layers of the network being built."
    details = (
        "Linear layers alone can only draw straight lines: two of them in a row are still "
        "one straight-line map. An activation between them bends each number (relu keeps "
        "positives and turns negatives into 0; tanh and sigmoid squash into a range), so the "
        "stack can learn curved borders. 'identity' changes nothing: use it to see the "
        "network collapse back to a straight line. Wire it after an FFNLayer; it adds no "
        "weights."
    )
    inputs = (Port("model", "MODEL", description="The network so far"),)
    outputs = (Port("model", "MODEL"),)
    params = (Param("function", "select", "relu", "The bend", options=tuple(ACTIVATIONS)),)

    def run(self, ctx, params, model):
        layers = layers_of(model_input(model, "ActivationLayer"))
        return {"model": nn.Sequential(*layers, ACTIVATIONS[params["function"]]())}


class TrainAndEvaluate(LibraryNode):
    type = "edu:TrainAndEvaluate"
    category = "EDU"
    description = "Trains the network built from FFNLayers on the training rows, then labels the queries."
    details = (
        "The network from the FFNLayer / ActivationLayer chain gets one more Linear layer "
        "with one output per class, then learns: for 'epochs' rounds it looks at all the "
        "training rows at once, measures its mistakes (cross-entropy) and lets Adam adjust "
        "every weight with learning rate 'lr'. 'losses' shows the mistakes shrinking, one "
        "number per epoch. Then it labels x_query: 'predictions' (the class with the highest "
        "score), the sorted 'classes', and the trained 'model'. The network that arrives is "
        "copied, never changed, so every run trains from the same start. While it trains, its "
        "card's bar and the Training pane show the epoch and the loss curve; Stop ends the "
        "training after the epoch under way and labels the queries with what it learnt."
    )
    inputs = (Port("model", "MODEL", description="The network from FFNLayer / ActivationLayer"),
              Port("x_train", description="Training features [N, F]"),
              Port("y_train", "LIST", description="One label per training row"),
              Port("x_query", description="Features [M, F] to classify"))
    outputs = (Port("predictions", "LIST"), Port("classes", "LIST"), Port("model", "MODEL"),
               Port("losses"))
    params = (
        Param("epochs", "int", 400, "Training rounds over all the rows", min=1, max=100_000),
        Param("lr", "float", 0.05, "Learning rate: the step size", min=0.0),
    )
    uses_rng = True
    reports_training = True   # the card's bar and the Training pane, as TrainingLoop's
    REPORT_EVERY_S = 0.25     # a report copies every loss so far: at most this often, not every epoch

    def run(self, ctx, params, model, x_train, y_train, x_query):
        layers = layers_of(copy.deepcopy(model_input(model, "TrainAndEvaluate")))
        labels = class_labels(y_train, "y_train", "TrainAndEvaluate")
        x, queries = training_data("TrainAndEvaluate", x_train, x_query, len(labels))
        found = linears(layers)
        if not found:
            raise NodeError("TrainAndEvaluate: the network has no Linear layer; add at least one "
                            "FFNLayer")
        if found[0].in_features != x.shape[1]:
            raise NodeError(f"Size mismatch: the first FFNLayer takes {found[0].in_features} "
                            f"features, but x_train {shape_str(x.shape)} has {x.shape[1]}; set its "
                            f"in_features to {x.shape[1]}")
        classes = sorted(set(labels))
        head = fresh_linear(ctx, found[-1].out_features, len(classes), "TrainAndEvaluate output layer")
        net = nn.Sequential(*layers, head).to(ctx.device)
        target = torch.tensor([classes.index(v) for v in labels], device=x.device)
        optimizer = torch.optim.Adam(net.parameters(), lr=params["lr"])
        epochs, lr = params["epochs"], params["lr"]
        config = {"model": "the FFNLayer network + an output layer", "params": sum(p.numel() for p in net.parameters()),
                  "optimizer": "Adam", "lr": lr, "loss_fn": "CrossEntropyLoss", "epochs": epochs,
                  "device": str(x.device), "batch_size": x.shape[0], "precision": "fp32", "accumulate_steps": 1,
                  "grad_clip_norm": None, "early_stopping_patience": None, "validation": False, "lr_scheduler": None}
        losses: list[float] = []
        reported: list = []       # the losses as reports carry them, rounded once each
        best = (float("inf"), 0)  # (loss, epoch)

        def report(epoch: int) -> None:
            ctx.progress(epoch=epoch, epochs=epochs, losses=list(reported), val_losses=[],
                         lrs=[lr] * len(reported), best_epoch=best[1] or None,
                         best_loss=_reported(best[0]) if best[1] else None, config=config)

        report_at = 0.0
        for epoch in range(1, epochs + 1):
            if ctx.cancelled():
                ctx.log(f"TrainAndEvaluate stopped after {len(losses)} of {epochs} epochs: the queries are "
                        "labelled by what it learnt so far")
                report(len(losses))
                break
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(net(x), target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            reported.append(_reported(losses[-1]))
            if losses[-1] < best[0]:
                best = (losses[-1], epoch)
            if epoch == epochs or time.monotonic() >= report_at:
                report(epoch)
                report_at = time.monotonic() + self.REPORT_EVERY_S
        trained = TrainedNetwork(net.eval(), classes)
        return {"predictions": trained.predict(queries), "classes": classes, "model": trained,
                "losses": torch.tensor(losses)}
