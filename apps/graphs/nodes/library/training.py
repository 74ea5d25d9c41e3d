"""Training nodes: a loss function, an optimizer, and a one-off backward pass."""
from __future__ import annotations

import inspect

import torch
from torch import nn

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode, shape_str

CATEGORY = "Training"

LOSSES = ("CrossEntropyLoss", "MSELoss", "BCEWithLogitsLoss", "BCELoss", "L1Loss",
          "SmoothL1Loss", "NLLLoss", "HuberLoss", "KLDivLoss", "CosineEmbeddingLoss",
          "MarginRankingLoss")
OPTIMIZERS = ("Adam", "SGD", "AdamW", "RMSprop", "Adagrad", "RAdam", "NAdam", "Rprop", "ASGD")


@register
class Loss(LibraryNode):
    type = "Loss"
    category = CATEGORY
    description = "Chooses how a model's mistakes are measured during training."
    details = (
        "A loss function turns the gap between the model's predictions and the right answers "
        "into one number; training tries to make that number small. This node does not "
        "compute anything yet: it hands the chosen function to a TrainingLoop. "
        "CrossEntropyLoss suits picking one class out of several (predictions [batch, classes], "
        "answers [batch] of class numbers); MSELoss (mean squared error) and L1Loss suit "
        "predicting numbers; BCEWithLogitsLoss suits yes/no answers."
    )
    outputs = (Port("loss_fn", "LOSS_FN"),)
    params = (Param("type", "select", "CrossEntropyLoss", "Which loss function", options=LOSSES),)

    def run(self, ctx, params, **inputs):
        return {"loss_fn": getattr(nn, params["type"])()}


@register
class Optimizer(LibraryNode):
    type = "Optimizer"
    category = CATEGORY
    description = "Chooses how the model's weights are nudged to reduce the loss."
    details = (
        "After each backward pass every weight knows its gradient: which way makes the loss "
        "bigger. The optimizer moves each weight a little the other way. 'lr' (learning rate) "
        "is the step size: too big and training jumps around, too small and it crawls. SGD "
        "takes plain steps; Adam and AdamW adapt the step for each weight and are good first "
        "choices. 'weight_decay' gently pulls weights towards zero to avoid overfitting. The "
        "model must contain trainable weights (e.g. a Linear or Conv2d layer)."
    )
    inputs = (Port("model", "MODEL"),)
    outputs = (Port("optimizer", "OPTIMIZER"),)
    params = (
        Param("type", "select", "Adam", "Which optimizer", options=OPTIMIZERS),
        Param("lr", "float", 0.001, "Learning rate: the step size", min=0.0),
        Param("weight_decay", "float", 0.0, "Pull of the weights towards zero", min=0.0),
    )

    def run(self, ctx, params, model):
        if not isinstance(model, nn.Module):
            raise NodeError(f"Optimizer needs a model (a network of layers), but received a "
                            f"{type(model).__name__}")
        weights = [p for p in model.parameters() if p.requires_grad]
        if not weights:
            raise NodeError(f"The model ({type(model).__name__}) has no trainable parameters, so "
                            "there is nothing for the optimizer to update; connect a model that "
                            "contains layers with weights, such as Linear or Conv2d")
        kind = getattr(torch.optim, params["type"])
        options = {"lr": params["lr"]}
        if params["weight_decay"]:
            if "weight_decay" not in inspect.signature(kind).parameters:
                raise NodeError(f"{params['type']} has no weight_decay setting; set weight_decay "
                                "to 0 or choose another optimizer")
            options["weight_decay"] = params["weight_decay"]
        return {"optimizer": kind(weights, **options)}


@register
class BackwardOnce(LibraryNode):
    type = "BackwardOnce"
    category = CATEGORY
    description = "Runs one backward pass from this tensor so you can inspect the gradients."
    details = (
        "Backpropagation works out, for every number that led to this tensor, how much a "
        "small change in it would change the result. BackwardOnce adds up all of the tensor's "
        "numbers and runs that backward pass once; the gradients then appear on the tensors "
        "and layer weights upstream (turn on Capture gradients to see them). It does not "
        "change any weight, and it passes the tensor on unchanged ([1, 4] → [1, 4]). Only a "
        "float tensor that tracks gradients can be differentiated; otherwise the log says so."
    )
    inputs = (Port("tensor"),)
    outputs = (Port("tensor"),)
    cacheable = False

    def run(self, ctx, params, tensor):
        if ctx.gradients:  # the engine runs the one backward pass, from this tensor, after the forward pass
            return {"tensor": tensor}
        if tensor.is_floating_point() and tensor.requires_grad:
            tensor.sum().backward(retain_graph=True)
            ctx.log(f"BackwardOnce: gradients computed from sum() of {shape_str(tensor.shape)}")
        else:
            why = ("it holds whole numbers" if not tensor.is_floating_point()
                   else "it does not track gradients (turn on Capture gradients, or feed it "
                        "from a layer or a TensorCreate with requires_grad)")
            ctx.log(f"BackwardOnce: nothing to differentiate in {shape_str(tensor.shape)}: {why}")
        return {"tensor": tensor}
