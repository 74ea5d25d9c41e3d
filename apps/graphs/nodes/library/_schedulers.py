"""A TrainingLoop trains with an optimizer of its own, made again over the model's trainable
weights (training.py, ``_rebuilt_optimizer``); the scheduler an LRScheduler node made over the
graph's optimizer is made again over that one: the same class and settings, read back from the
scheduler itself."""
from __future__ import annotations

import inspect
from collections import Counter
from typing import Any

import torch

from ..base import NodeError

NOT_SETTINGS = ("optimizer", "last_epoch", "verbose")


def rebuilt_scheduler(scheduler: Any, optimizer: torch.optim.Optimizer) -> Any:
    """The same scheduler (class, settings and schedule) over the rebuilt optimizer."""
    kind = type(scheduler)
    accepted = inspect.signature(kind.__init__).parameters
    state = scheduler.state_dict()
    settings = {}
    for key, value in state.items():
        if key not in accepted or key in NOT_SETTINGS:
            continue
        if isinstance(value, Counter):   # MultiStepLR's milestones: one listed twice multiplies twice
            value = sorted(value.elements())
        if isinstance(value, (int, float, str, bool, list, tuple)):
            settings[key] = value
    if "max_lr" in accepted and "max_lr" not in settings:   # OneCycleLR keeps it in the optimizer's groups
        rates = [group["max_lr"] for group in scheduler.optimizer.param_groups]
        settings["max_lr"] = rates[0] if len(set(rates)) == 1 else rates
    try:
        rebuilt = kind(optimizer, **settings)
    except (TypeError, ValueError, KeyError) as exc:
        raise NodeError(f"TrainingLoop could not set up the {kind.__name__} scheduler again: {exc}") from exc
    rebuilt.load_state_dict(state)   # and what no argument carries (OneCycleLR's phases, say)
    return rebuilt
