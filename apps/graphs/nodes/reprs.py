"""A value as text, cut at a limit: the Inspector, the outputs API, a run's summaries and
Print show it so."""
from __future__ import annotations

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
