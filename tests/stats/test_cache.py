"""The summary cache: bounded by bytes, least recently used out first, computed once per key."""
from __future__ import annotations

import threading
import time

import orjson
import pytest

from apps.stats.cache import SummaryCache
from codefyui import conf


def summary_of(size: int) -> dict:
    """A summary whose JSON encoding is exactly ``size`` bytes."""
    padding = size - len(orjson.dumps({"pad": ""}))
    return {"pad": "x" * padding}


def test_entries_are_evicted_least_recently_used_first_to_stay_within_the_byte_budget():
    """SS4: the cache keeps at most CODEFYUI_STATS_CACHE_MAX_BYTES of summaries, measured as JSON."""
    cache = SummaryCache(max_bytes=300)
    for name in ("a", "b", "c"):
        cache.get(("run", name, "out", 1), lambda: summary_of(100))
    assert cache.usage() == {"entries": 3, "bytes": 300, "max_bytes": 300}
    cache.get(("run", "a", "out", 1), lambda: pytest.fail("a is cached"))   # a is now the most recent
    cache.get(("run", "d", "out", 1), lambda: summary_of(150))
    assert ("run", "b", "out", 1) not in cache and ("run", "c", "out", 1) not in cache
    assert ("run", "a", "out", 1) in cache and ("run", "d", "out", 1) in cache
    assert cache.usage()["bytes"] == 250


def test_a_summary_bigger_than_the_whole_budget_is_answered_but_not_kept():
    cache = SummaryCache(max_bytes=100)
    assert cache.get(("run", "n", "out", 1), lambda: summary_of(500)) == summary_of(500)
    assert cache.usage() == {"entries": 0, "bytes": 0, "max_bytes": 100}


def test_the_budget_is_the_setting(monkeypatch):
    """SS4: the default budget is CODEFYUI_STATS_CACHE_MAX_BYTES."""
    monkeypatch.setattr(conf, "STATS_CACHE_MAX_BYTES", 1234)
    assert SummaryCache().max_bytes == 1234


def test_a_new_serial_is_a_new_key():
    cache = SummaryCache(max_bytes=10_000)
    assert cache.get(("run", "n", "out", 1), lambda: {"mean": 1.0}) == {"mean": 1.0}
    assert cache.get(("run", "n", "out", 2), lambda: {"mean": 2.0}) == {"mean": 2.0}


def test_concurrent_requests_for_one_key_compute_it_once():
    cache = SummaryCache(max_bytes=10_000)
    calls, started = [], threading.Event()

    def slow_summary():
        calls.append(threading.current_thread().name)
        started.set()
        time.sleep(0.2)
        return {"mean": 0.5}

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get(("run", "n", "out", 7), slow_summary)))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert results == [{"mean": 0.5}] * 8
    assert len(calls) == 1 and calls[0].startswith("codefyui-stats")   # computed off the request threads


def test_a_failed_computation_reaches_every_waiter_and_is_not_cached():
    cache = SummaryCache(max_bytes=10_000)

    def broken():
        time.sleep(0.05)
        raise RuntimeError("boom")

    errors = []

    def ask():
        try:
            cache.get(("run", "n", "out", 1), broken)
        except RuntimeError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert errors == ["boom"] * 3
    assert cache.get(("run", "n", "out", 1), lambda: {"ok": True}) == {"ok": True}
