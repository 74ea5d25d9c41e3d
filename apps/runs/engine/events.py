"""What the engine tells the world while a run goes: events and small port summaries."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from apps.graphs.nodes.reprs import short_repr

# Event kinds, in the order a run can emit them.
RUN_STARTED = "run_started"
NODE_RUNNING, NODE_COMPLETED, NODE_CACHED = "node_running", "node_completed", "node_cached"
NODE_ERROR, NODE_SKIPPED = "node_error", "node_skipped"
LOG = "log"
PROGRESS = "progress"                       # a node's progress (TrainingLoop: epoch, batch, losses), in data
RUN_COMPLETED, RUN_FAILED, RUN_STOPPED = "run_completed", "run_failed", "run_stopped"
# The status a run ends with after each terminal event (a Run row's, a RunOutcome's).
TERMINAL_STATUS = {RUN_COMPLETED: "succeeded", RUN_FAILED: "failed", RUN_STOPPED: "cancelled"}
TERMINAL = tuple(TERMINAL_STATUS)


@dataclass
class Event:
    kind: str
    run_id: str
    node_id: str | None = None
    label: str | None = None                # the node's name, for people (set by the executor)
    summary: dict[str, Any] | Summaries | None = None   # port -> summary, on completed / cached
    error: str | None = None
    text: str | None = None                 # a log line (Print output, warnings)
    level: str = "info"                     # info | success | warning | error
    data: dict[str, Any] | None = None      # run_started: {"device": ...}; progress: what the node reports
    time: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """A shallow copy (summaries are never changed once sent): ``asdict``'s deep copy
        cost a sixth of the server's time per event."""
        return {k: v for k, v in vars(self).items() if v is not None}


def json_number(x: float) -> float | str | None:
    """NaN and infinities as readable JSON: "NaN", "Infinity", "-Infinity"."""
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


PIECE = 1 << 18  # elements: 2 MB in float64, the fastest here of 2**16..2**20


def pieces(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The tensor's elements in flat pieces, for reductions that must not copy it whole."""
    return t.reshape(-1).split(PIECE)


def mean64(t: torch.Tensor) -> float:
    """The mean of a floating tensor, added up in float64 a piece at a time. A plain
    ``sum(dtype=torch.float64)`` first copies the whole tensor to float64: about 380 MB more
    and 13x slower for 50M elements (bench/tensor_mean.py)."""
    if t.numel() <= PIECE:   # one piece: the same sum without splitting (most outputs are small)
        return t.sum(dtype=torch.float64).item() / t.numel()
    return sum(part.sum(dtype=torch.float64).item() for part in pieces(t)) / t.numel()


def value_kind(value: Any) -> str:
    """What a port's value is, in the words the summaries, the Inspector and the outputs API
    share: tensor, model, scalar, string, list, none, or else its type's own name."""
    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, torch.nn.Module):
        return "model"
    if isinstance(value, bool | int | float):
        return "scalar"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "list"
    return "none" if value is None else type(value).__name__


def shape_text(shape) -> str:
    """A tensor's shape as people read it here: [1, 16]."""
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def parameter_counts(model: torch.nn.Module) -> tuple[int, int]:
    """(all parameters, trainable ones) of a model."""
    params = list(model.parameters())
    return sum(p.numel() for p in params), sum(p.numel() for p in params if p.requires_grad)


def shares_weights(t: torch.Tensor) -> bool:
    """Whether a tensor is a trainable leaf (a weight) or a view of one: a later run's
    training changes it in place."""
    return t.requires_grad and (t.is_leaf or t._base is not None)


class Summaries:
    """A node's port summaries (``summarise`` of each port but the ``__`` ones), each fresh
    output tensor's worked out when first asked for (``resolve``), the rest at once.

    A run worker's events are pickled by its outbox thread, which then works them out on the
    other core beside the next node: the engine's thread no longer pays ~0.05 ms a tensor
    port on its way through the graph. Nothing later changes such a tensor (nodes never write
    to their inputs); what training does change (weights, models) is summarised at once.
    Pickles as the plain dict it stands for."""

    __slots__ = ("_ports", "_resolved")

    def __init__(self, outputs: dict[str, Any]):
        self._ports = [(port, v if _later(v) else summarise(v)) for port, v in outputs.items() if not port.startswith("__")]
        self._resolved: dict[str, Any] | None = None

    def resolve(self) -> dict[str, Any]:
        if self._resolved is None:
            self._resolved = {port: summarise(v) if _later(v) else v for port, v in self._ports}
        return self._resolved

    def __reduce__(self):
        return dict, (self.resolve(),)


def _later(value: Any) -> bool:
    """A fresh plain tensor, whose summary cannot fail: anything else is summarised at once,
    where a failure fails its node (a failure while pickling would lose the event)."""
    return (isinstance(value, torch.Tensor) and value.layout == torch.strided and not value.is_quantized
            and not shares_weights(value))


def summarise(value: Any) -> dict[str, Any]:
    """A small, JSON-safe description of one port's value (reference §3, output_summary)."""
    kind = value_kind(value)
    if kind == "tensor":
        out: dict[str, Any] = {"type": "tensor", "shape": list(value.shape), "dtype": str(value.dtype)}
        if value.numel() and value.dtype != torch.bool and not value.is_complex():
            t = value.detach()
            # One pass for both ends: a third faster than numpy's min and max, small or large.
            lo, hi = (x.item() for x in torch.aminmax(t))
            if t.device.type == "cpu" and t.layout == torch.strided and t.dtype in (torch.float32, torch.float64):
                # A float32 sum is cascaded (accurate to ~1e-6 of the sum of magnitudes: this
                # mean is rounded to 4 places) at a fifth of mean64's cost; every output has one.
                mean = t.sum().item() / t.numel()
            else:
                mean = mean64(t) if t.is_floating_point() else None
            if t.is_floating_point():
                out.update(min=json_number(round(lo, 4)), max=json_number(round(hi, 4)),
                           mean=json_number(round(mean, 4)))
            else:
                out.update(min=lo, max=hi)
        return out
    if kind == "model":
        params, trainable = parameter_counts(value)
        return {"type": "model", "class": type(value).__name__, "params": params, "trainable": trainable}
    if kind == "scalar":
        return {"type": "scalar", "value": json_number(value) if isinstance(value, float) else value}
    if kind == "string":
        return {"type": "string", "value": value[:200]}
    if kind == "list":
        return {"type": "list", "length": len(value), "repr": short_repr(value, 200)}
    if kind == "none":
        return {"type": "none"}
    return {"type": kind, "repr": short_repr(value, 200)}


def log_entry(event: Event) -> dict[str, Any] | None:
    """The Execution Log row an event makes, if any: {node, label, text, level}."""
    node, kind = event.node_id, event.kind
    name = event.label or node
    text = {
        RUN_STARTED: "Execution started",
        RUN_COMPLETED: "Execution completed successfully",
        RUN_FAILED: f"Execution error: {event.error}",
        RUN_STOPPED: "Execution cancelled",
        NODE_COMPLETED: f"Node {name} completed",
        NODE_CACHED: f"Node {name} served from cache",
        NODE_ERROR: f"Node {name} error: {event.error}",
        LOG: event.text,
    }.get(kind)
    return None if text is None else {"node": node, "label": name, "text": text, "level": event.level}
