"""A value as text, cut at a limit: the Inspector, the outputs API, a run's summaries and
Print show it so."""
from __future__ import annotations

import re
import reprlib
from functools import lru_cache
from itertools import islice
from typing import Any


def short_repr(value: Any, limit: int) -> str:
    """``repr(value)[:limit]``, made without writing out what is cut: a list of a million
    items was formatted whole (0.2 s and 13 MB for NumPy integers) to show its first
    thousands of characters, on the server's one request thread when the Inspector shows it.
    Containers are formatted up to as many items as could fill ``limit``, so what is shown is
    what repr() begins with (a string longer than ``limit`` inside one is cut in its middle)."""
    return _reprs(limit).repr(value)[:limit]


@lru_cache(maxsize=8)
def _reprs(limit: int) -> reprlib.Repr:
    shortened = _InReprOrder()
    items = limit // 3 + 1   # each item takes at least one character and a separator
    for name in ("maxtuple", "maxlist", "maxarray", "maxdict", "maxset", "maxfrozenset", "maxdeque"):
        setattr(shortened, name, items)
    shortened.maxlevel, shortened.maxstring, shortened.maxlong, shortened.maxother = 8, limit, limit, limit
    return shortened


class _InReprOrder(reprlib.Repr):
    """reprlib's shortening, with a dict's keys and a set's items in the order repr() shows
    them (reprlib sorts them)."""

    def repr_dict(self, x: dict, level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{" + self.fillvalue + "}"
        pieces = [f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}" for k, v in islice(x.items(), self.maxdict)]
        return "{" + ", ".join(pieces + [self.fillvalue] * (len(x) > self.maxdict)) + "}"

    def repr_set(self, x: set, level: int) -> str:
        return self._repr_iterable(x, level, "{", "}", self.maxset) if x else "set()"

    def repr_frozenset(self, x: frozenset, level: int) -> str:
        return self._repr_iterable(x, level, "frozenset({", "})", self.maxfrozenset) if x else "frozenset()"


def readable(value: Any, limit: int) -> str:
    """A value as Print writes it into the log: Python's own text where it teaches, plain words
    where it would puzzle a 14-year-old. A dict reads as ``name = value`` pairs, an optimizer
    as its kind and settings, and a tensor that remembers its operation (``grad_fn``) says
    what that means beside the notation."""
    if isinstance(value, dict):
        return " · ".join(f"{_words(k)} = {_number(v, limit)}" for k, v in islice(value.items(), limit // 4 + 1))[:limit] or "{} (empty)"
    if isinstance(value, (list, tuple, set, frozenset)):
        return short_repr(value, limit)
    if hasattr(value, "param_groups") and hasattr(value, "zero_grad"):   # a torch optimizer, without importing torch
        return _optimizer(value, limit)
    text = str(value)
    grad_fn = getattr(value, "grad_fn", None)
    if grad_fn is not None:
        made_by = re.sub(r"Backward\d*$", "", type(grad_fn).__name__).lower() or "an operation"
        text += (f"\n(grad_fn=<{type(grad_fn).__name__}>: made by {made_by}, so Backward can send "
                 "gradients back through it)")
    elif getattr(value, "requires_grad", False):
        text += "\n(requires_grad=True: PyTorch keeps track of it to work out its gradient)"
    return text


def _words(key: Any) -> str:
    return str(key).replace("_", " ") if isinstance(key, str) else short_repr(key, 40)


def _number(value: Any, limit: int) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return short_repr(value, limit)


def _optimizer(optimizer: Any, limit: int) -> str:
    groups = optimizer.param_groups
    tensors = sum(len(group.get("params", ())) for group in groups)
    settings = {k: v for k, v in (groups[0].items() if groups else ())   # switches left off say nothing
                if k != "params" and v is not None and v is not False}
    learning = settings.pop("lr", None)
    lr = f"learning rate {_number(learning, 40)}, " if learning is not None else ""
    shown = ", ".join(f"{k} {_number(v, 40)}" for k, v in settings.items())
    return (f"{type(optimizer).__name__} optimizer: {lr}updates {tensors} weight tensor{'s' * (tensors != 1)}"
            f" ({shown})")[:limit]
