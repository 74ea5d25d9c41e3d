"""Heavy tensor work leaves the one request thread.

Every sync view runs on one thread (codefyui/handler.py). A view about to do work in
proportion to a big capture (the Stats summary of 100 million values, the heat map of a
10,000 × 10,000 slice) would hold every student's next click for as long: 0.1-0.5 s on a
2-core VM. Such a view calls ``ahead(elements)`` first. On the request thread, for a GET or
HEAD request and from ``ELEMENTS`` values up, that raises ``MovedOff``; the handler then
serves the request again from its start on a thread of its own, where ``ahead`` lets it
through, while the request thread serves everyone else. Only reads move, so doing their
beginning twice changes nothing, and what they computed before moving is cached.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

ELEMENTS = 1_000_000   # a million values: ~10-40 ms of tensor work on a 2-core VM, and more to draw

_here = threading.local()


class MovedOff(BaseException):
    """The request goes on elsewhere. A BaseException, as GeneratorExit is: no ``except
    Exception`` between the view and the handler (Django's own included) may take it for an error."""


def ahead(elements: int) -> None:
    """Work in proportion to ``elements`` values is about to start in this request."""
    if elements >= ELEMENTS and getattr(_here, "movable", False):
        raise MovedOff


def ahead_of(*values) -> None:
    """Work in proportion to these values (tensors, arrays, tables; None counts nothing)."""
    ahead(sum(values_in(v) for v in values))


def values_in(value) -> int:
    """How many numbers a tensor, a NumPy array or a table holds; 0 for anything else."""
    if callable(getattr(value, "numel", None)):
        return value.numel()
    size = getattr(value, "size", 0)
    return size if isinstance(size, int) else 0


@contextmanager
def movable(allowed: bool = True) -> Iterator[None]:
    """Within it, on this thread, ``ahead`` moves heavy work off (the handler's request thread)."""
    _here.movable = allowed
    try:
        yield
    finally:
        _here.movable = False
