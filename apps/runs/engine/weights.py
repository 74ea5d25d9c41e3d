"""Persist weights between runs: layers kept per (tab, node, structure), so the next Run
continues from the same weights. An app-wide LRU; memory only; a changed structure (new
params) gets fresh weights. The server's store is the one that lasts: a run worker receives
its tab's entries with the run and hands back what the run ended with."""
from __future__ import annotations

import hashlib
import json
import threading
from typing import Any, Callable

import torch
from cachetools import LRUCache


def structure_hash(type_key: str, params: dict[str, Any]) -> str:
    blob = json.dumps([type_key, params], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class WeightStore:
    def __init__(self, max_modules: int = 200):
        # (scope, node, structure) -> module, the least recently used dropped past max_modules
        self._modules: LRUCache[tuple[str, str, str], torch.nn.Module] = LRUCache(maxsize=max_modules)
        self._lock = threading.Lock()   # runs' threads share it, and an LRUCache's reads reorder it

    def get_or_build(self, scope: str, node_id: str, structure: str,
                     build: Callable[[], torch.nn.Module]) -> tuple[torch.nn.Module, bool]:
        """(module, reused). A new structure for the node drops its old weights."""
        key = (scope, node_id, structure)
        with self._lock:
            module = self._modules.get(key)
            if module is not None:
                return module, True
            for old in [k for k in self._modules if k[:2] == (scope, node_id)]:
                del self._modules[old]
        module = build()
        with self._lock:
            self._modules[key] = module
        return module, False

    def reset(self, scope: str) -> int:
        """Drop every kept layer of one tab; returns how many."""
        with self._lock:
            keys = [k for k in self._modules if k[0] == scope]
            for key in keys:
                del self._modules[key]
            return len(keys)

    def entries(self, scope: str) -> list[tuple[tuple[str, str, str], torch.nn.Module]]:
        """The kept layers of one tab, for a run worker to continue from (a use: they become the
        most recently used; the other tabs' keep their order)."""
        with self._lock:
            return [(k, self._modules[k]) for k in [k for k in self._modules if k[0] == scope]]

    def replace(self, scope: str, entries: list[tuple[tuple[str, str, str], torch.nn.Module]]) -> None:
        """Keep exactly these layers for the tab (what its last run ended with)."""
        with self._lock:
            for key in [k for k in self._modules if k[0] == scope]:
                del self._modules[key]
            for key, module in entries:
                self._modules[key] = module

    def count(self, scope: str) -> int:
        with self._lock:
            return sum(1 for k in self._modules if k[0] == scope)


WEIGHTS = WeightStore()
