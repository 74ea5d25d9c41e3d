"""Computed summaries: a byte-bounded LRU (cachetools), computed once however many ask at the same time.

Keys are ``(run_id, node_id, port, serial)``: the capture's write serial changes whenever a
port is written again (a loop node), so an overwritten port is summarised afresh and its
stale entry simply ages out. An entry's size is the length of its JSON (orjson) encoding;
the budget is ``CODEFYUI_STATS_CACHE_MAX_BYTES``.

Where the work runs. Views are sync, on the server's one request thread (codefyui/handler.py).
A summary takes 10-150 ms for 1-100 million values on a 2-core VM: from a million values up,
the request waits for it on a thread of its own (codefyui/heavy.py), and the request thread
serves the class meanwhile. The summary itself is computed on a small shared pool of four
threads, which bounds how many run at once in this process (the API, scripts and tests call
from other threads too), so thirty students opening Stats together queue up instead of
thrashing two cores and the memory bus. Single-flight: the first request for a key submits
the work; later requests for the same key, arriving before it is done, wait on the same
future, so a port is summarised once. A failed computation is not cached: every waiter sees
the error, and the next request tries again.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

import orjson
from cachetools import LRUCache

from codefyui import conf, heavy

from .summary import summarise

Key = tuple[str, str, str, int]

# Shared by every cache: at most four summaries are computed at once in this process.
_workers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="codefyui-stats")


class SummaryCache:
    def __init__(self, max_bytes: int | None = None, pool: ThreadPoolExecutor | None = None):
        budget = conf.STATS_CACHE_MAX_BYTES if max_bytes is None else max_bytes
        # key -> (summary, its bytes): cachetools counts the bytes and drops the least recently used
        self._entries: LRUCache[Key, tuple[dict, int]] = LRUCache(maxsize=budget, getsizeof=lambda entry: entry[1])
        self._pending: dict[Key, Future] = {}
        self._lock = threading.RLock()   # re-entrant: a done callback may run inside get()
        self._pool = pool or _workers

    @property
    def max_bytes(self) -> int:
        return self._entries.maxsize

    def get(self, key: Key, compute: Callable[[], dict], elements: int = 0) -> dict:
        """The cached summary for ``key``, computing it (once) when missing. Treat it as read-only.
        A summary of ``elements`` values or more is waited for off the one request thread
        (codefyui/heavy.py): its computation starts here, and the request comes back for it."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                return entry[0]
            future = self._pending.get(key)
            if future is None:
                future = self._pool.submit(compute)
                self._pending[key] = future
                future.add_done_callback(lambda done: self._settle(key, done))
        heavy.ahead(elements)
        return future.result()

    def _settle(self, key: Key, future: Future) -> None:
        with self._lock:
            if self._pending.get(key) is future:
                del self._pending[key]
            if future.exception() is None:
                self._keep(key, future.result())

    def _keep(self, key: Key, summary: dict) -> None:
        size = len(orjson.dumps(summary, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS))
        if size > self.max_bytes or key in self._entries:
            return   # bigger than the whole budget: answered, not kept
        self._entries[key] = (summary, size)

    def __contains__(self, key: Key) -> bool:
        with self._lock:
            return key in self._entries

    def usage(self) -> dict[str, int]:
        with self._lock:
            return {"entries": len(self._entries), "bytes": self._entries.currsize, "max_bytes": self.max_bytes}

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_cache: SummaryCache | None = None
_cache_lock = threading.Lock()


def get_cache() -> SummaryCache:
    """The server-wide summary cache, created on first use."""
    global _cache
    with _cache_lock:
        if _cache is None:
            _cache = SummaryCache()
        return _cache


def set_cache(cache: SummaryCache | None) -> None:
    """Replace the server-wide cache (tests)."""
    global _cache
    with _cache_lock:
        _cache = cache


def port_summary(run_id: str, node_id: str, port: str, serial: int, value) -> dict:
    """The summary of one capture, computed once (per write serial) and cached."""
    return get_cache().get((run_id, node_id, port, serial), lambda: summarise(
        value, threshold=conf.STATS_SAMPLE_THRESHOLD, sample_size=conf.STATS_SAMPLE_SIZE), heavy.values_in(value))
