"""Training nodes: a loss function, an optimizer, a one-off backward pass, and the loop that
trains a model (TrainingLoop) with its scheduler, evaluation and inference."""
from __future__ import annotations

import contextlib
import functools
import inspect
import math
from typing import Any

import torch
from torch import nn

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode, shape_str
from . import training_code as code
from ._datasets import DataLoader as BatchLoader
from ._schedulers import rebuilt_scheduler

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
    to_python = classmethod(code.loss)

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
    to_python = classmethod(code.optimizer)

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
    to_python = classmethod(code.backward_once)

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


# -- training a model -------------------------------------------------------------------------

DEVICES = ("auto", "cpu", "cuda", "mps")
PRECISIONS = ("fp32", "bf16", "fp16")
SCHEDULERS = ("StepLR", "CosineAnnealingLR", "ExponentialLR", "ReduceLROnPlateau",
              "CosineAnnealingWarmRestarts", "MultiStepLR", "OneCycleLR")


def _device(ctx, requested: str, node: str) -> torch.device:
    """'auto' follows the run's device; a device this server lacks falls back to it, said in the log."""
    if requested == "auto":
        return ctx.device
    available = {"cpu": True, "cuda": torch.cuda.is_available(),
                 "mps": bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()}
    if available[requested]:
        return torch.device(requested)
    ctx.log(f"Warning: {node}: no {requested} on this server, so it runs on {ctx.device}")
    return ctx.device


def precision_available(precision: str, device: torch.device) -> bool:
    """bf16 autocast runs on CPUs and on GPUs that have it; fp16 with a GradScaler needs CUDA
    (a CPU computes fp16 slowly and without the hardware it is meant for)."""
    if precision == "fp32":
        return True
    if device.type == "cuda":
        return precision == "fp16" or torch.cuda.is_bf16_supported()
    return precision == "bf16" and device.type == "cpu"


def _reported(x: float) -> float | str:
    """A loss as progress reports carry it (JSON): rounded, or "NaN" / "Infinity" once it diverged."""
    if math.isfinite(x):
        return round(x, 6)
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def capture_epoch(ctx, epoch: int, loss: float, val_loss: float | None, model: nn.Module) -> None:
    """With Record node outputs on: an epoch's losses and a copy of every layer's weights, kept as
    the node's ``__epoch<n>`` capture (the Training pane's epoch selector reads it)."""
    if not ctx.recording:
        return
    ctx.capture(f"__epoch{epoch}", {
        "epoch": epoch, "loss": loss, "val_loss": val_loss,
        "weights": {name: p.detach().to("cpu", copy=True) for name, p in model.named_parameters()}})


def _split(batch: Any) -> tuple[Any, Any]:
    """(data, targets) from a batch, or (data, None) when the loader gives bare data."""
    if isinstance(batch, (list, tuple)) and len(batch) == 2:
        return batch[0], batch[1]
    return batch, None


def _to(value: Any, device: torch.device) -> Any:
    return value.to(device, non_blocking=True) if isinstance(value, torch.Tensor) else value


def _rebuilt_optimizer(optimizer: torch.optim.Optimizer, weights: list[nn.Parameter]) -> torch.optim.Optimizer:
    """The same optimizer (class and settings) over the model's trainable weights, on their device."""
    kind = type(optimizer)
    accepted = inspect.signature(kind.__init__).parameters
    return kind(weights, **{k: v for k, v in optimizer.defaults.items() if k in accepted})


class _SizeGuard:
    """Which of a loop's steps the element limit must see. Every op of a step makes results that
    grow with the batch, so once a step at some batch size passed the guard, a step at that size
    or smaller runs unguarded (limits.suspended): the guard would otherwise double a small model's
    step time. ``bound`` is the loader's batch size (no batch it gives is larger), when it has one."""

    def __init__(self, ctx, loader: Any):
        self.ctx, self.checked = ctx, 0
        size = getattr(loader, "batch_size", None)
        self.bound = size if isinstance(size, int) and size > 0 else None

    def step(self, size: int):
        return self.ctx.unguarded() if size <= self.checked else contextlib.nullcontext()

    def fetch(self):
        return self.ctx.unguarded() if self.bound is not None and self.bound <= self.checked else contextlib.nullcontext()

    def passed(self, size: int) -> None:
        self.checked = max(self.checked, size)

    def batches(self, loader: Any):
        """The loader's batches, each fetched guarded until a full-size step has passed."""
        batches = iter(loader)
        while True:
            with self.fetch():
                try:
                    batch = next(batches)
                except StopIteration:
                    return
            yield batch


def _batch_size(data: Any) -> int:
    return int(data.shape[0]) if isinstance(data, torch.Tensor) and data.dim() else 1


@register
class TrainingLoop(LibraryNode):
    type = "TrainingLoop"
    category = CATEGORY
    description = "Trains a model on a dataloader's batches for a number of epochs."
    details = (
        "One epoch shows the model every batch of the training data once. For each batch the "
        "model predicts, the loss function measures how wrong it was, the backward pass works out "
        "each weight's gradient and the optimizer nudges the weights. The Training pane shows the "
        "loss falling epoch by epoch (and the validation loss, when a val_dataloader is wired: "
        "data the model never trains on, so a gap between the two curves means it memorises). "
        "'early_stopping_patience' stops after that many epochs without a better loss and keeps "
        "the best weights; 'grad_clip_norm' caps the size of each step's gradients; "
        "'accumulate_steps' adds up several batches' gradients before each step (batch 8 × 4 "
        "steps behaves like batch 32); 'precision' bf16 or fp16 computes in 16-bit numbers where "
        "the device has them. The last batch's gradients stay on the weights for the Backward tab."
    )
    inputs = (Port("model", "MODEL"), Port("dataloader", "DATALOADER"), Port("optimizer", "OPTIMIZER"),
              Port("loss_fn", "LOSS_FN"), Port("val_dataloader", "DATALOADER", optional=True),
              Port("lr_scheduler", "ANY", optional=True))
    outputs = (Port("model", "MODEL"), Port("losses"), Port("val_losses"), Port("metrics", "ANY"),
               Port("grad_scaler_state", "ANY"))
    params = (
        Param("epochs", "int", 5, "How many times the model sees the whole training data", min=1, max=1000),
        Param("device", "select", "auto", "Where to train ('auto' follows the run's device)", options=DEVICES),
        Param("early_stopping_patience", "int", 0, "Stop after this many epochs without a better loss "
              "and keep the best weights (0 = never)", min=0),
        Param("grad_clip_norm", "float", 0.0, "Largest gradient norm allowed in a step (0 = no clipping)", min=0.0),
        Param("precision", "select", "fp32", "Number format: fp32, or bf16 / fp16 where the device has it",
              options=PRECISIONS),
        Param("accumulate_steps", "int", 1, "Batches whose gradients add up before each optimizer step",
              min=1, max=1024),
    )
    cacheable = False       # it changes its model's weights
    reports_training = True
    to_python = classmethod(code.training_loop)

    def run(self, ctx, params, model, dataloader, optimizer, loss_fn, val_dataloader=None, lr_scheduler=None):
        _check_inputs(model, dataloader, optimizer, loss_fn, val_dataloader)
        return _Training(ctx, params, model, dataloader, optimizer, loss_fn, val_dataloader, lr_scheduler).run()


def _check_inputs(model, dataloader, optimizer, loss_fn, val_dataloader) -> None:
    if not isinstance(model, nn.Module):
        raise NodeError(f"TrainingLoop needs a model on 'model', but received a {type(model).__name__}")
    for port, loader in (("dataloader", dataloader), ("val_dataloader", val_dataloader)):
        if loader is not None and not hasattr(loader, "__iter__"):
            raise NodeError(f"TrainingLoop needs a DataLoader on '{port}', but received a {type(loader).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise NodeError(f"TrainingLoop needs an Optimizer node's output on 'optimizer', but received a "
                        f"{type(optimizer).__name__}")
    if not callable(loss_fn):
        raise NodeError(f"TrainingLoop needs a Loss node's output on 'loss_fn', but received a {type(loss_fn).__name__}")
    if not any(p.requires_grad for p in model.parameters()):
        raise NodeError(f"The model ({type(model).__name__}) has no trainable weights, so there is nothing to train")


class _Training:
    """One TrainingLoop run: the loop, its progress reports and its per-epoch captures."""

    def __init__(self, ctx, params, model, loader, optimizer, loss_fn, val_loader, scheduler):
        self.ctx, self.loader, self.val_loader, self.loss_fn = ctx, loader, val_loader, loss_fn
        self.device = _device(ctx, params["device"], "TrainingLoop")
        self.model = model.to(self.device)
        if isinstance(loss_fn, nn.Module):
            self.loss_fn = loss_fn.to(self.device)
        self.weights = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = _rebuilt_optimizer(optimizer, self.weights)
        self.scheduler = rebuilt_scheduler(scheduler, self.optimizer) if scheduler is not None else None
        self.epochs, self.patience = params["epochs"], params["early_stopping_patience"]
        self.clip, self.accumulate = params["grad_clip_norm"], params["accumulate_steps"]
        self.precision = params["precision"]
        if not precision_available(self.precision, self.device):
            ctx.log(f"Warning: TrainingLoop: {self.precision} is not available on {self.device}, so it trains in fp32")
            self.precision = "fp32"
        self.scaler = torch.amp.GradScaler(self.device.type) if self.precision == "fp16" else None
        self.losses: list[float] = []
        self.val_losses: list[float] = []
        self.lrs: list[float] = []
        self.epoch = self.batch = 0
        self.best_loss, self.best_epoch, self.best_state = math.inf, 0, None
        self.train_guard, self.val_guard = _SizeGuard(ctx, loader), _SizeGuard(ctx, val_loader)
        try:
            self.batches = len(loader)
        except TypeError:
            self.batches = None

    def autocast(self):
        if self.precision == "fp32":
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float16
        return torch.autocast(self.device.type, dtype=dtype)

    def run(self) -> dict[str, Any]:
        ctx, model = self.ctx, self.model
        before = getattr(model, "epochs_trained", 0)
        if before:
            ctx.log(f"Continuing from the weights of the last run: {before} epochs so far")
        waited, stopped_early = 0, False
        for self.epoch in range(1, self.epochs + 1):
            loss = self.train_epoch()
            if loss is None:  # Stop (or the deadline) came during the epoch
                ctx.log(f"TrainingLoop stopped during epoch {self.epoch}: the model keeps what it learnt "
                        f"in {len(self.losses)} full epochs and the batches since")
                break
            val_loss = self.validate()
            self.losses.append(loss)
            if val_loss is not None:
                self.val_losses.append(val_loss)
            self.lrs.append(self.optimizer.param_groups[0]["lr"])
            watched = val_loss if val_loss is not None else loss
            if watched < self.best_loss:
                self.best_loss, self.best_epoch, waited = watched, self.epoch, 0
                if self.patience:
                    self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            else:
                waited += 1
            self.step_scheduler(watched)
            self.report()
            self.capture_epoch()
            if self.patience and waited >= self.patience:
                stopped_early = True
                ctx.log(f"Early stopping after epoch {self.epoch}: no better loss for {waited} epochs; "
                        f"keeping the weights of epoch {self.best_epoch}")
                break
        if self.best_state is not None:  # early stopping keeps the best epoch's weights
            model.load_state_dict(self.best_state)
        model.epochs_trained = before + len(self.losses)
        return {
            "model": model,
            "losses": torch.tensor(self.losses, dtype=torch.float32),
            "val_losses": torch.tensor(self.val_losses, dtype=torch.float32),
            "metrics": {"final_train_loss": self.losses[-1] if self.losses else None,
                        "final_val_loss": self.val_losses[-1] if self.val_losses else None,
                        "best_epoch": self.best_epoch, "total_epochs_run": len(self.losses),
                        "stopped_early": stopped_early, "lr_history": list(self.lrs)},
            "grad_scaler_state": self.scaler.state_dict() if self.scaler is not None else None,
        }

    def train_epoch(self) -> float | None:
        """One pass over the training data; its mean loss, or None when stopped part-way."""
        model, optimizer, guard = self.model, self.optimizer, self.train_guard
        model.train()
        total, count, waiting, group = 0.0, 0, 0, 0
        for self.batch, batch in enumerate(guard.batches(self.loader), start=1):
            if self.ctx.cancelled():
                return None
            data, targets = (_to(v, self.device) for v in _split(batch))
            size = _batch_size(data)
            with guard.step(size):
                if waiting == 0:
                    optimizer.zero_grad()
                with self.autocast():
                    out = model(data)
                    loss = self.loss_fn(out, targets) if targets is not None else self.loss_fn(out)
                self.backward(loss / self.accumulate if self.accumulate > 1 else loss)
                waiting, group = waiting + 1, max(group, size)
                last = self.batches is not None and self.batch == self.batches
                if waiting == self.accumulate or last:
                    self.optimizer_step()
                    waiting = 0
                total += loss.item()
            if waiting == 0:
                guard.passed(group)
                group = 0
            count += 1
            self.report()
        if count == 0:
            raise NodeError("TrainingLoop: the dataloader gave no batches; check its dataset is not empty")
        if waiting:  # a loader without a length ended mid-group
            self.optimizer_step()
        return total / count

    def backward(self, loss: torch.Tensor) -> None:
        (self.scaler.scale(loss) if self.scaler is not None else loss).backward()

    def optimizer_step(self) -> None:
        if self.scaler is not None:
            if self.clip:
                self.scaler.unscale_(self.optimizer)
                nn.utils.clip_grad_norm_(self.weights, self.clip)
            self.scaler.step(self.optimizer)
            self.scaler.update()
            return
        if self.clip:
            nn.utils.clip_grad_norm_(self.weights, self.clip)
        self.optimizer.step()

    def validate(self) -> float | None:
        if self.val_loader is None:
            return None
        model, guard = self.model, self.val_guard
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for batch in guard.batches(self.val_loader):
                data, targets = (_to(v, self.device) for v in _split(batch))
                size = _batch_size(data)
                with guard.step(size), self.autocast():
                    out = model(data)
                    total += (self.loss_fn(out, targets) if targets is not None else self.loss_fn(out)).item()
                guard.passed(size)
                count += 1
        if count == 0:
            raise NodeError("TrainingLoop: the val_dataloader gave no batches; check its dataset is not empty")
        return total / count

    def step_scheduler(self, watched: float) -> None:
        if self.scheduler is None:
            return
        if isinstance(self.scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            self.scheduler.step(watched)
        else:
            self.scheduler.step()

    def report(self) -> None:
        """Everything so far, for the card's bar and the Training pane (the engine sends at most
        4 a second, and the newest when the node returns)."""
        self.ctx.progress(
            epoch=self.epoch, epochs=self.epochs, batch=self.batch, batches=self.batches,
            losses=[_reported(x) for x in self.losses], val_losses=[_reported(x) for x in self.val_losses],
            lrs=list(self.lrs), best_epoch=self.best_epoch or None,
            best_loss=_reported(self.best_loss) if self.best_epoch else None, config=self.config)

    @functools.cached_property
    def config(self) -> dict[str, Any]:
        """The settings the Training pane's parameter table lists."""
        return {"model": type(self.model).__name__, "params": sum(p.numel() for p in self.model.parameters()),
                "optimizer": type(self.optimizer).__name__, "lr": self.optimizer.param_groups[0]["lr"],
                "loss_fn": type(self.loss_fn).__name__, "epochs": self.epochs, "device": str(self.device),
                "batch_size": getattr(self.loader, "batch_size", None), "precision": self.precision,
                "accumulate_steps": self.accumulate, "grad_clip_norm": self.clip or None,
                "early_stopping_patience": self.patience or None, "validation": self.val_loader is not None,
                "lr_scheduler": type(self.scheduler).__name__ if self.scheduler is not None else None}

    def capture_epoch(self) -> None:
        capture_epoch(self.ctx, self.epoch, self.losses[-1], self.val_losses[-1] if self.val_losses else None,
                      self.model)


@register
class LRScheduler(LibraryNode):
    type = "LRScheduler"
    category = CATEGORY
    description = "Changes the learning rate as training goes on."
    details = (
        "A big learning rate learns fast at first; a smaller one settles the weights later. A "
        "scheduler lowers (or cycles) the optimizer's learning rate after every epoch of a "
        "TrainingLoop: StepLR multiplies it by 'gamma' every 'step_size' epochs, ExponentialLR "
        "by 'gamma' every epoch, CosineAnnealingLR glides it down over 'T_max' epochs, "
        "ReduceLROnPlateau lowers it by 'gamma' when the loss stops improving, OneCycleLR rises "
        "to 'max_lr' and falls again over 'total_steps'. Wire its output into the TrainingLoop's "
        "lr_scheduler input; the Training pane's epoch table shows the rate of each epoch."
    )
    inputs = (Port("optimizer", "OPTIMIZER"),)
    outputs = (Port("scheduler", "ANY"),)
    params = (
        Param("type", "select", "StepLR", "Which schedule", options=SCHEDULERS),
        Param("step_size", "int", 10, "Epochs between steps (StepLR, MultiStepLR)", min=1),
        Param("gamma", "float", 0.1, "Factor the rate is multiplied by", min=0.0),
        Param("T_max", "int", 50, "Epochs of one cosine glide (CosineAnnealing*)", min=1),
        Param("max_lr", "float", 0.01, "Highest rate (OneCycleLR)", min=0.0),
        Param("total_steps", "int", 1000, "Steps of the whole cycle (OneCycleLR)", min=1),
    )
    cacheable = False  # a scheduler holds its optimizer, which holds the model's weights
    to_python = classmethod(code.lr_scheduler)

    def run(self, ctx, params, optimizer):
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise NodeError(f"LRScheduler needs an Optimizer node's output on 'optimizer', but received a "
                            f"{type(optimizer).__name__}")
        schedules = torch.optim.lr_scheduler
        kind, gamma = params["type"], params["gamma"]
        made = {
            "StepLR": lambda: schedules.StepLR(optimizer, step_size=params["step_size"], gamma=gamma),
            "CosineAnnealingLR": lambda: schedules.CosineAnnealingLR(optimizer, T_max=params["T_max"]),
            "ExponentialLR": lambda: schedules.ExponentialLR(optimizer, gamma=gamma),
            "ReduceLROnPlateau": lambda: schedules.ReduceLROnPlateau(optimizer, factor=gamma),
            "CosineAnnealingWarmRestarts": lambda: schedules.CosineAnnealingWarmRestarts(optimizer, T_0=params["T_max"]),
            "MultiStepLR": lambda: schedules.MultiStepLR(
                optimizer, milestones=[params["step_size"] * i for i in range(1, 5)], gamma=gamma),
            "OneCycleLR": lambda: schedules.OneCycleLR(optimizer, max_lr=params["max_lr"],
                                                       total_steps=params["total_steps"]),
        }[kind]
        if kind == "ReduceLROnPlateau" and not gamma < 1:
            raise NodeError("LRScheduler: ReduceLROnPlateau needs 'gamma' below 1 (the factor that lowers the rate)")
        return {"scheduler": made()}


@register
class EvaluateModel(LibraryNode):
    type = "EvaluateModel"
    category = CATEGORY
    description = "Measures how often a trained classifier is right on a dataset."
    details = (
        "Runs the model over every example of the dataset, in batches of 'batch_size', without "
        "training it: the class with the highest score is its answer. 'accuracy' is the share it "
        "got right (0 to 1), 'correct' and 'total' the counts. Use data the model did not train "
        "on (a test split) to see how well it generalises."
    )
    inputs = (Port("model", "MODEL"), Port("dataset", "DATASET"))
    outputs = (Port("accuracy", "SCALAR"), Port("correct", "SCALAR"), Port("total", "SCALAR"))
    params = (
        Param("batch_size", "int", 256, "Examples per forward pass", min=1, max=65536),
        Param("device", "select", "cpu", "Where to evaluate", options=("cpu", "cuda")),
    )
    cacheable = False  # it reads a model whose weights training changes
    to_python = classmethod(code.evaluate_model)

    def run(self, ctx, params, model, dataset):
        if not isinstance(model, nn.Module):
            raise NodeError(f"EvaluateModel needs a model on 'model', but received a {type(model).__name__}")
        if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
            raise NodeError(f"EvaluateModel needs a dataset on 'dataset', but received a {type(dataset).__name__}")
        device = _device(ctx, params["device"], "EvaluateModel")
        model = model.to(device)
        was_training = model.training
        model.eval()
        correct = total = 0
        loader = BatchLoader(dataset, batch_size=params["batch_size"])
        with torch.no_grad():
            for batch in loader:
                data, targets = _split(batch)
                if targets is None:
                    raise NodeError("EvaluateModel needs a dataset of (input, class) pairs to compare answers with")
                scores = model(_to(data, device))
                targets = torch.as_tensor(targets).to(device)
                if scores.dim() != 2 or scores.shape[0] != targets.shape[0]:
                    raise NodeError(f"EvaluateModel expects the model to give [batch, classes] scores, but it gave "
                                    f"{shape_str(scores.shape)} for {targets.shape[0]} examples")
                correct += int((scores.argmax(dim=1) == targets).sum())
                total += int(targets.numel())
        model.train(was_training)
        return {"accuracy": correct / total if total else 0.0, "correct": correct, "total": total}


@register
class Inference(LibraryNode):
    type = "Inference"
    category = "IO"  # CodefyUI files it under IO
    description = "Runs a trained model on an input, without training it."
    details = (
        "Puts the model in evaluation mode (Dropout off, BatchNorm uses what it learnt) and runs "
        "one forward pass without tracking gradients: the output is the model's prediction for "
        "the input, e.g. [1, 10] class scores for one [1, 1, 8, 8] image. The model passes on "
        "unchanged."
    )
    inputs = (Port("model", "MODEL"), Port("input"))
    outputs = (Port("output"), Port("model", "MODEL"))
    params = (Param("device", "select", "auto", "Where to run ('auto' follows the run's device)", options=DEVICES),)
    cacheable = False  # it reads a model whose weights training changes
    to_python = classmethod(code.inference)

    def run(self, ctx, params, model, **given):
        if not isinstance(model, nn.Module):
            raise NodeError(f"Inference needs a model on 'model', but received a {type(model).__name__}")
        device = _device(ctx, params["device"], "Inference")
        model = model.to(device)
        was_training = model.training
        model.eval()
        with torch.no_grad():
            output = model(given["input"].to(device))
        model.train(was_training)
        return {"output": output, "model": model}
