"""Capture gradients (Settings → Training Behavior): after the forward pass, one backward pass
from the target the seed's order picks, and every output port's and parameter's gradient
kept for the Backward tab. No Django here.

The target (reference §12 step 3): the first BackwardOnce's tensor; else, after a TrainingLoop,
no extra backward (its last batch's gradients are on the parameters); else, with
Auto-synthesize loss on, sum() of the largest output that tracks gradients; else none, and
the run log and the Backward tab say why. With Capture gradients on BackwardOnce only passes
its tensor on: the engine runs the one backward pass, so the two never both run it.

What is kept, under ports no edge or summary shows (they start with ``__grad``):
per node ``__grad_index`` (which gradients it has), ``__grad.out.<port>`` and
``__grad.weight.<parameter>`` (a tensor, or None when it took no part in the loss); per run,
under the node id ``RUN``, ``__grad_target`` (what the backward pass started from, or why
none ran) and ``__grad_layers`` (one row per layer: its node, name and parameters; its
statistics are worked out from their kept gradients when the Backward tab is read, not in
every run).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import torch

from .plan import Plan

RUN = ""                      # the node id of run-level captures
INDEX = "__grad_index"
TARGET = "__grad_target"
LAYERS = "__grad_layers"
TRAINING_LOOP = "TrainingLoop"

VANISHING, EXPLODING, HEALTHY = "vanishing", "exploding", "healthy"


def output_port(port: str) -> str:
    return f"__grad.out.{port}"


def weight_port(name: str) -> str:
    return f"__grad.weight.{name}"


@dataclass(frozen=True)
class GradStats:
    """‖g‖, mean |g| and max |g| over one gradient or several (a layer's parameters)."""

    norm: float
    mean: float
    max: float

    @classmethod
    def of(cls, grads: Iterable[torch.Tensor]) -> GradStats | None:
        squares = total = largest = 0.0
        count = 0
        for g in grads:
            if g.numel() == 0:
                continue
            size = g.detach().abs().flatten()
            if size.dtype not in (torch.float32, torch.float64):
                size = size.float()
            top = float(size.max())
            # Squares of a tiny or huge gradient leave float32's range: scale them by the largest.
            scale = top if 0 < top < math.inf and not 1e-15 < top < 1e15 else 1.0
            scaled = size / scale if scale != 1.0 else size
            squares += float(torch.dot(scaled, scaled)) * scale * scale
            total += float(size.sum())
            largest = max(largest, top)
            count += size.numel()
        if not count:
            return None
        return cls(math.sqrt(squares), total / count, largest)

    @property
    def verdict(self) -> str:
        """The seed's thresholds (GR3); a gradient that is not a finite number has exploded."""
        if not all(math.isfinite(v) for v in (self.norm, self.mean, self.max)):
            return EXPLODING
        if self.norm < 1e-7 or self.mean < 1e-8:
            return VANISHING
        if self.norm > 1e3 or self.max > 1e2:
            return EXPLODING
        return HEALTHY


def tracks_gradients(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point() and value.requires_grad


def _shape(t: torch.Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]" if t.dim() else "(a single number)"


@dataclass
class Target:
    tensor: torch.Tensor | None   # what .sum().backward() starts from; None: no backward pass
    text: str                     # the run log's line, which the Backward tab shows too
    shown: bool                   # whether gradients are there to keep (a backward ran, or a TrainingLoop's)


def pick_target(plan: Plan, outputs: dict[str, dict[str, Any]], auto_loss: bool) -> Target:
    """Which tensor the backward pass starts from, in the seed's order (see the module docstring)."""
    ran = [node for node in plan.nodes.values() if node.id in outputs]
    once = next((n for n in ran if n.type == "BackwardOnce"), None)
    if once is not None:
        tensor = outputs[once.id].get("tensor")
        if tracks_gradients(tensor):
            return Target(tensor, f"Capture gradients: backward pass from sum() of {once.label}'s tensor "
                                  f"{_shape(tensor)}", True)
        return Target(None, f"Capture gradients: no backward pass ran: {once.label}'s tensor does not track "
                            "gradients (it holds whole numbers, or nothing that made it has weights or "
                            "tracks gradients)", False)
    loop = next((n for n in ran if n.type == TRAINING_LOOP), None)
    if loop is not None:
        return Target(None, f"Capture gradients: no extra backward pass after {loop.label}: the weight "
                            "gradients shown are those of its last batch", True)
    if not auto_loss:
        return Target(None, "Capture gradients: no backward pass ran: the graph has no BackwardOnce node and "
                            "no TrainingLoop. Add a BackwardOnce after the tensor to differentiate, or turn on "
                            "Auto-synthesize loss (Settings → Training Behavior)", False)
    best = None
    for node in ran:
        for port, value in outputs[node.id].items():
            if not port.startswith("__") and tracks_gradients(value) and (best is None or value.numel() > best[0].numel()):
                best = (value, node, port)
    if best is None:
        return Target(None, "Capture gradients: no backward pass ran: Auto-synthesize loss found no output "
                            "that tracks gradients (add a layer with weights, such as Linear)", False)
    tensor, node, port = best
    return Target(tensor, f"Capture gradients: backward pass from a synthesised loss, sum() of "
                          f"{node.label}.{port} {_shape(tensor)} (the largest output that tracks gradients)", True)


class GradientCapture:
    """A Capture gradients run's bookkeeping: the layers nodes built, and after the forward
    pass the backward pass and what to keep of it."""

    def __init__(self) -> None:
        self.modules: dict[str, list[torch.nn.Module]] = {}   # node id -> the layers it built
        self._lasting: set[int] = set()   # ids of the layers kept for the next run (Persist weights)
        self._grads: dict[int, torch.Tensor | None] = {}     # id of an output or a parameter -> its gradient

    def built(self, node_id: str, module: torch.nn.Module, lasting: bool = False) -> None:
        """A node built (or took back a kept) layer: gradients start from nothing this run.
        ``lasting``: the layer is kept for later runs, whose training changes its gradients."""
        module.zero_grad(set_to_none=True)
        self.modules.setdefault(node_id, []).append(module)
        if lasting:
            self._lasting.add(id(module))

    def backward(self, target: Target, outputs: dict[str, dict[str, Any]]) -> None:
        """The backward pass from the target, as one ``autograd.grad`` over every output that
        tracks gradients and every parameter of the run's layers. Each gradient is kept as
        the pass returns it: no hook runs per tensor in the middle of the pass (each cost
        more than its arithmetic), and nothing is added into a ``.grad`` a later run changes.
        An output or parameter the target does not depend on gets None."""
        if target.tensor is None:
            return
        tensors: dict[int, torch.Tensor] = {}
        for ports in outputs.values():
            for port, value in ports.items():
                if not port.startswith("__") and tracks_gradients(value):
                    tensors.setdefault(id(value), value)
        for modules in self.modules.values():
            for module in modules:
                for param in module.parameters():
                    if param.requires_grad:
                        tensors.setdefault(id(param), param)
        grads = torch.autograd.grad(target.tensor.sum(), list(tensors.values()), allow_unused=True)
        self._grads = dict(zip(tensors, grads))

    def grad(self, tensor: torch.Tensor) -> torch.Tensor | None:
        """An output's gradient from the backward pass, or None."""
        grad = self._grads.get(id(tensor))
        return None if grad is None else grad.detach()

    def kept(self, plan: Plan, outputs: dict[str, dict[str, Any]], target: Target) -> Iterator[tuple[str, str, Any]]:
        """(node, port, value) of every capture the Backward tab reads but the target's
        (``target_capture``)."""
        if not target.shown:
            return
        passed = target.tensor is not None   # the pass ran here, not a TrainingLoop's
        layers = []
        for node in plan.nodes.values():
            if node.id not in outputs:
                continue
            ports = [p for p, v in outputs[node.id].items()
                     if not p.startswith("__") and isinstance(v, torch.Tensor) and v.is_floating_point()]
            weights = []
            for port in ports:
                yield node.id, output_port(port), self.grad(outputs[node.id][port])
            for module in self.modules.get(node.id, ()):
                for name, param in module.named_parameters():
                    weights.append(name)
                    yield node.id, weight_port(name), self.grad(param) if passed else self._last_batch(module, param)
                layers += _layers(node.id, node.label, module)
            yield node.id, INDEX, {"outputs": ports, "weights": weights}
        yield RUN, LAYERS, layers

    def _last_batch(self, module: torch.nn.Module, param: torch.Tensor) -> torch.Tensor | None:
        """After a TrainingLoop, a parameter's gradient as kept: its last batch's ``.grad``,
        copied when the layer is kept for later runs, whose training changes it."""
        if param.grad is None:
            return None
        return param.grad.detach().clone() if id(module) in self._lasting else param.grad.detach()


def target_capture(target: Target) -> tuple[str, str, dict[str, Any]]:
    """The run's first gradient capture: what the backward pass starts from, or why none ran."""
    return RUN, TARGET, {"ran": target.tensor is not None, "shown": target.shown, "text": target.text}


def _layers(node_id: str, label: str, module: torch.nn.Module) -> list[dict[str, Any]]:
    """One row per layer that holds weights of its own: the node's layer itself, or each layer
    of a model (a Sequential's children), with its parameters' names as the node's weight
    gradients are kept under them."""
    rows = []
    for name, sub in module.named_modules():
        weights = [p for p, _ in sub.named_parameters(prefix=name, recurse=False)]
        if weights:
            rows.append({"node": node_id, "name": label if not name else f"{label} › {name} ({type(sub).__name__})",
                         "weights": weights})
    return rows


def layer_stats(row: dict[str, Any], kept: Callable[[str, str], Any]) -> GradStats | None:
    """A per-layer row's statistics over its parameters' kept gradients (``kept(node, port)``
    reads a capture); None when none of them has one."""
    grads = (kept(row["node"], weight_port(name)) for name in row["weights"])
    return GradStats.of(g for g in grads if isinstance(g, torch.Tensor))
