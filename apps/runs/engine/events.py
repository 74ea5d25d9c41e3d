"""What the engine tells the world while a run goes: events and small port summaries."""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

# Event kinds, in the order a run can emit them.
RUN_STARTED = "run_started"
NODE_RUNNING, NODE_COMPLETED, NODE_CACHED = "node_running", "node_completed", "node_cached"
NODE_ERROR, NODE_SKIPPED, NODE_PROGRESS = "node_error", "node_skipped", "node_progress"
LOG = "log"
RUN_COMPLETED, RUN_FAILED, RUN_STOPPED = "run_completed", "run_failed", "run_stopped"
TERMINAL = (RUN_COMPLETED, RUN_FAILED, RUN_STOPPED)


@dataclass
class Event:
    kind: str
    run_id: str
    node_id: str | None = None
    label: str | None = None                # the node's name, for people (set by the executor)
    summary: dict[str, Any] | None = None   # port -> summary, on completed / cached
    error: str | None = None
    text: str | None = None                 # a log line (Print output, warnings)
    level: str = "info"                     # info | success | warning | error
    data: dict[str, Any] | None = None      # progress payload
    time: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


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
    return sum(part.sum(dtype=torch.float64).item() for part in pieces(t)) / t.numel()


def summarise(value: Any) -> dict[str, Any]:
    """A small, JSON-safe description of one port's value (reference §3, output_summary)."""
    if isinstance(value, torch.Tensor):
        out: dict[str, Any] = {"type": "tensor", "shape": list(value.shape), "dtype": str(value.dtype)}
        if value.numel() and value.dtype != torch.bool and not value.is_complex():
            t = value.detach()
            lo, hi = torch.aminmax(t)
            if t.is_floating_point():
                out.update(min=json_number(round(lo.item(), 4)), max=json_number(round(hi.item(), 4)),
                           mean=json_number(round(mean64(t), 4)))
            else:
                out.update(min=lo.item(), max=hi.item())
        return out
    if isinstance(value, torch.nn.Module):
        params = sum(p.numel() for p in value.parameters())
        trainable = sum(p.numel() for p in value.parameters() if p.requires_grad)
        return {"type": "model", "class": type(value).__name__, "params": params, "trainable": trainable}
    if isinstance(value, bool | int | float):
        return {"type": "scalar", "value": json_number(value) if isinstance(value, float) else value}
    if isinstance(value, str):
        return {"type": "string", "value": value[:200]}
    if isinstance(value, list | tuple):
        return {"type": "list", "length": len(value), "repr": repr(value)[:200]}
    if value is None:
        return {"type": "none"}
    return {"type": type(value).__name__, "repr": repr(value)[:200]}


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
