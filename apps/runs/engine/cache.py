"""The execution cache: a node whose type, params, wiring, inputs, device and seed are
unchanged is served from here and reported ``cached``."""
from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any


def cache_key(type_key: str, params: dict[str, Any], device: str, seed: int | None,
              inputs: dict[str, tuple[str, str]], upstream_keys: dict[str, str]) -> str:
    """SHA-256 over everything that decides a deterministic node's outputs."""
    wiring = sorted((port, upstream_keys[src], src_port) for port, (src, src_port) in inputs.items())
    blob = json.dumps([type_key, params, device, seed, wiring], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class ExecutionCache:
    """A small LRU of node results: (outputs, log lines) by cache key."""

    def __init__(self, max_entries: int = 256):
        self.max_entries = max_entries
        self._entries: OrderedDict[str, tuple[dict[str, Any], list[str]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> tuple[dict[str, Any], list[str]] | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
            return hit

    def put(self, key: str, outputs: dict[str, Any], logs: list[str]) -> None:
        with self._lock:
            self._entries[key] = (outputs, logs)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
