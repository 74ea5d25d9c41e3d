"""The Training pane of a training node, from the progress it reported (the card's bar and
this pane read the same report): Epoch n/total, Loss, Best, the loss curve as SVG, the
parameter and epoch tables. Pure functions; the tab class is in panel.py."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .values import fmt

WIDTH, HEIGHT = 320, 150                 # the curve's drawing, in SVG units (it scales to the pane)
LEFT, RIGHT, TOP, BOTTOM = 44, 10, 10, 24  # room for the axes' labels

PARAMETER_ROWS = (("model", "Model"), ("params", "Parameters"), ("optimizer", "Optimizer"), ("lr", "Learning rate"),
                  ("loss_fn", "Loss"), ("epochs", "Epochs"), ("batch_size", "Batch size"), ("device", "Device"),
                  ("precision", "Precision"), ("accumulate_steps", "Accumulate steps"),
                  ("grad_clip_norm", "Gradient clipping"), ("early_stopping_patience", "Early stopping patience"),
                  ("validation", "Validation"), ("lr_scheduler", "LR scheduler"))


def number(x: Any) -> float:
    """A reported loss as a float ("NaN" / "Infinity" are how a diverged one travels)."""
    return float(x) if isinstance(x, (int, float)) else {"NaN": math.nan, "Infinity": math.inf}.get(x, -math.inf)


@dataclass
class Curve:
    train: str                       # polyline points
    val: str
    y_ticks: list[tuple[float, str]]  # (y, label)
    x_ticks: list[tuple[float, str]]
    diverged: bool                   # some loss is not a finite number (drawn at the top)
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    bottom: float = HEIGHT - BOTTOM
    right: float = WIDTH - RIGHT
    dots: list[tuple[float, float]] = field(default_factory=list)  # each training epoch's point


def loss_curve(losses: list, val_losses: list) -> Curve | None:
    """Training (and validation) loss per epoch as SVG polylines; None before the first epoch."""
    train, val = [number(x) for x in losses], [number(x) for x in val_losses]
    if not train:
        return None
    finite = [x for x in train + val if math.isfinite(x)] or [0.0]
    lo, hi = min(finite), max(finite)
    if hi - lo < 1e-12:
        lo, hi = lo - 0.5, hi + 0.5
    epochs = max(len(train), len(val))
    span_x, span_y = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def at(i: int, x: float) -> tuple[float, float]:
        px = LEFT + (span_x * i / (epochs - 1) if epochs > 1 else span_x / 2)
        py = TOP if not math.isfinite(x) else TOP + span_y * (hi - x) / (hi - lo)
        return round(px, 1), round(py, 1)

    def points(values: list[float]) -> str:
        return " ".join(f"{x},{y}" for x, y in (at(i, v) for i, v in enumerate(values)))

    middle = (lo + hi) / 2
    return Curve(train=points(train), val=points(val),
                 y_ticks=[(at(0, v)[1], fmt(round(v, 4))) for v in (hi, middle, lo)],
                 x_ticks=[(at(0, 0)[0], "1")] + ([(at(epochs - 1, 0)[0], str(epochs))] if epochs > 1 else []),
                 diverged=any(not math.isfinite(x) for x in train + val),
                 dots=[at(i, v) for i, v in enumerate(train)])


def epoch_rows(progress: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per finished epoch: its loss, validation loss and learning rate; the best marked."""
    losses, val, lrs = progress.get("losses", []), progress.get("val_losses", []), progress.get("lrs", [])
    best = progress.get("best_epoch")
    return [{"number": i + 1, "loss": fmt(number(loss)), "val_loss": fmt(number(val[i])) if i < len(val) else "—",
             "lr": fmt(lrs[i]) if i < len(lrs) else "—", "best": i + 1 == best} for i, loss in enumerate(losses)]


def parameter_rows(config: dict[str, Any]) -> list[tuple[str, str]]:
    """The training's settings, as the parameter table lists them (off for what is not used)."""
    rows = []
    for key, name in PARAMETER_ROWS:
        value = config.get(key)
        if isinstance(value, bool):
            value = "yes" if value else "no"
        elif value is None:
            value = "off"
        elif isinstance(value, float):
            value = fmt(value)
        elif isinstance(value, int) and key == "params":
            value = f"{value:,}"
        rows.append((name, str(value)))
    return rows


def summary(progress: dict[str, Any]) -> dict[str, Any]:
    """The pane's head line: Epoch n/total, the last epoch's loss, the best so far."""
    losses = progress.get("losses", [])
    best = progress.get("best_epoch")
    return {"epoch": progress.get("epoch") or 0, "epochs": progress.get("epochs") or 0,
            "loss": fmt(number(losses[-1])) if losses else "—",
            "best": f"{fmt(number(progress.get('best_loss')))} (epoch {best})" if best else "—"}


def recorded_epochs(ports: list[tuple[str, str]] | None, node_id: str) -> list[int]:
    """The epochs a run captured for the node (its "__epoch<n>" ports), in order."""
    found = (port.removeprefix("__epoch") for node, port in ports or () if node == node_id and port.startswith("__epoch"))
    return sorted(int(n) for n in found if n.isdigit())
