"""A fresh summary cache per test, and a way to shrink the summariser's tuning so that small
arrays take every path that big ones take (chunks, fine bins, crowded bins)."""
from __future__ import annotations

import contextlib

import pytest

from apps.stats import summary
from apps.stats.cache import SummaryCache, set_cache


@pytest.fixture(autouse=True)
def fresh_cache():
    cache = SummaryCache()
    set_cache(cache)
    yield cache
    set_cache(None)


@contextlib.contextmanager
def tuning(**sizes: int):
    """Temporarily use other sizes for the summariser's passes (its module constants, by lower-case name)."""
    saved = {name: getattr(summary, name.upper()) for name in sizes}
    for name, size in sizes.items():
        setattr(summary, name.upper(), size)
    try:
        yield
    finally:
        for name, size in saved.items():
            setattr(summary, name.upper(), size)


TINY = {"chunk": 16, "fine_bins": 8, "sort_at_most": 4, "max_pieces": 2}
