"""The execution cache: a node whose type, params, wiring, inputs, device and seed are
unchanged is served from here and reported ``cached``. One cache serves the whole server
within a byte budget (CODEFYUI_EXECUTION_CACHE_MAX_MB); each user reads and writes only
their own scope of it."""
from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from codefyui import conf

from .storage import StorageKey, count_storages


def cache_key(type_key: str, params: dict[str, Any], device: str, seed: int | None,
              inputs: dict[str, tuple[str, str]], upstream_keys: dict[str, str]) -> str:
    """SHA-256 over everything that decides a deterministic node's outputs."""
    wiring = sorted((port, upstream_keys[src], src_port) for port, (src, src_port) in inputs.items())
    blob = json.dumps([type_key, params, device, seed, wiring], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


ENTRY_BYTES = 1024  # what an entry costs besides its tensors and log text (key, dicts, summaries)


@dataclass
class _Entry:
    outputs: dict[str, Any]
    logs: list[str]
    storages: dict[StorageKey, int]
    own_bytes: int  # log text and the fixed cost: never shared


class ExecutionCache:
    """One LRU of node results for the whole server, within ``max_bytes``: each storage is
    counted once however many entries hold it, and the least recently used entries go
    first. Entries live in scopes (one per user): ``scope(name)`` is what a run is given,
    and a scope sees only its own entries. 0 bytes keeps nothing."""

    def __init__(self, max_bytes: int | None = None):
        self.max_bytes = conf.EXECUTION_CACHE_MAX_MB * 2**20 if max_bytes is None else max_bytes
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()  # least recently used first
        self._storages: dict[StorageKey, list[int]] = {}                      # key -> [bytes, entries holding it]
        self._bytes = 0
        self._lock = threading.Lock()

    def scope(self, name: Any) -> CacheScope:
        return CacheScope(self, str(name))

    def get(self, key: str, scope: str = "") -> tuple[dict[str, Any], list[str]] | None:
        with self._lock:
            entry = self._entries.get((scope, key))
            if entry is None:
                return None
            self._entries.move_to_end((scope, key))
            return entry.outputs, entry.logs

    def put(self, key: str, outputs: dict[str, Any], logs: list[str], scope: str = "") -> None:
        storages: dict[StorageKey, int] = {}
        count_storages(outputs, storages)
        entry = _Entry(outputs, list(logs), storages, ENTRY_BYTES + sum(len(line) for line in logs))
        with self._lock:
            self._drop((scope, key))
            if entry.own_bytes + sum(n for k, n in storages.items() if k not in self._storages) > self.max_bytes:
                return  # larger than the whole budget: keeping it would only empty the cache
            self._entries[(scope, key)] = entry
            self._bytes += entry.own_bytes
            for storage, size in storages.items():
                held = self._storages.setdefault(storage, [size, 0])
                self._bytes += size if held[1] == 0 else 0
                held[1] += 1
            while self._bytes > self.max_bytes and self._entries:
                self._drop(next(iter(self._entries)))

    def _drop(self, where: tuple[str, str]) -> None:
        entry = self._entries.pop(where, None)
        if entry is None:
            return
        self._bytes -= entry.own_bytes
        for storage in entry.storages:
            held = self._storages[storage]
            held[1] -= 1
            if held[1] == 0:
                self._bytes -= held[0]
                del self._storages[storage]

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._storages.clear()
            self._bytes = 0

    def usage(self) -> dict[str, int]:
        with self._lock:
            return {"entries": len(self._entries), "scopes": len({scope for scope, _ in self._entries}),
                    "bytes": self._bytes, "max_bytes": self.max_bytes}


@dataclass(frozen=True)
class CacheScope:
    """One user's part of the cache, with the ``get``/``put`` the executor calls."""

    cache: ExecutionCache
    name: str

    def get(self, key: str) -> tuple[dict[str, Any], list[str]] | None:
        return self.cache.get(key, self.name)

    def put(self, key: str, outputs: dict[str, Any], logs: list[str]) -> None:
        self.cache.put(key, outputs, logs, self.name)
