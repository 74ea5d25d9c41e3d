"""The capture store: every completed node's outputs, keyed by (run, node, port).

``CaptureStore`` is the interface the engine writes to and the Inspector reads from;
``MemoryCaptureStore`` is the server-wide default: the newest ``max_runs`` runs within
``max_bytes``, whole runs evicted oldest-first, never a run still being written. A worker
box will later answer reads remotely through the same interface, raising StoreUnreachable
while it is away. No Django here.
"""
from __future__ import annotations

import copy
import itertools
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch

from codefyui import conf


# The seed's words for StoreUnreachable: Inspector rows and the JSON API both say them.
UNREACHABLE = "The worker that holds this run's recorded outputs cannot be reached now"


class StoreUnreachable(Exception):
    """The store that holds this run's captures cannot be reached now."""


@dataclass(frozen=True)
class Capture:
    value: Any
    serial: int  # grows on every write; derived caches (stats) key on it


class CaptureStore(ABC):
    @abstractmethod
    def open_run(self, run_id: str) -> None:
        """A run starts writing; it is never evicted until closed."""

    @abstractmethod
    def close_run(self, run_id: str) -> None: ...

    @abstractmethod
    def put(self, run_id: str, node_id: str, port: str, value: Any) -> None: ...

    @abstractmethod
    def get(self, run_id: str, node_id: str, port: str) -> Capture | None:
        """The capture, or None when the store holds nothing for that port."""

    @abstractmethod
    def has_run(self, run_id: str) -> bool: ...

    @abstractmethod
    def ports(self, run_id: str) -> list[tuple[str, str]] | None:
        """(node, port) pairs captured for the run, or None when the run is not held."""

    @abstractmethod
    def drop_run(self, run_id: str) -> bool: ...

    @abstractmethod
    def usage(self) -> dict[str, int]: ...


@dataclass
class _Run:
    slots: dict[tuple[str, str], Capture] = field(default_factory=dict)
    storages: dict[tuple[str, int], int] = field(default_factory=dict)  # storage -> bytes, counted once

    @property
    def bytes(self) -> int:
        return sum(self.storages.values())


class MemoryCaptureStore(CaptureStore):
    def __init__(self, max_runs: int | None = None, max_bytes: int | None = None):
        self.max_runs = conf.RUN_OUTPUT_STORE_MAX_RUNS if max_runs is None else max_runs
        self.max_bytes = conf.RUN_OUTPUT_STORE_MAX_MB * 2**20 if max_bytes is None else max_bytes
        self._runs: OrderedDict[str, _Run] = OrderedDict()   # oldest first (by first write)
        self._open: set[str] = set()
        self._serial = itertools.count(1)
        self._lock = threading.Lock()

    def open_run(self, run_id: str) -> None:
        with self._lock:
            self._open.add(run_id)
            self._runs.setdefault(run_id, _Run())
            self._evict()

    def close_run(self, run_id: str) -> None:
        with self._lock:
            self._open.discard(run_id)
            self._evict()

    def put(self, run_id: str, node_id: str, port: str, value: Any) -> None:
        frozen = freeze(value)
        with self._lock:
            run = self._runs.setdefault(run_id, _Run())
            overwrite = (node_id, port) in run.slots
            run.slots[(node_id, port)] = Capture(frozen, next(self._serial))
            if overwrite:  # a loop node rewrote its port: recount what the run still holds
                run.storages = {}
                for capture in run.slots.values():
                    _count(capture.value, run.storages)
            else:
                _count(frozen, run.storages)
            self._evict(keep=run_id)

    def get(self, run_id: str, node_id: str, port: str) -> Capture | None:
        with self._lock:
            run = self._runs.get(run_id)
            return run.slots.get((node_id, port)) if run else None

    def has_run(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._runs

    def ports(self, run_id: str) -> list[tuple[str, str]] | None:
        with self._lock:
            run = self._runs.get(run_id)
            return list(run.slots) if run else None

    def drop_run(self, run_id: str) -> bool:
        with self._lock:
            return self._runs.pop(run_id, None) is not None

    def usage(self) -> dict[str, int]:
        with self._lock:
            return {"runs": len(self._runs), "max_runs": self.max_runs,
                    "bytes": sum(r.bytes for r in self._runs.values()), "max_bytes": self.max_bytes}

    def _evict(self, keep: str | None = None) -> None:
        """Drop whole runs, oldest first, until both budgets hold (open runs are never dropped)."""
        protected = self._open | ({keep} if keep else set())
        total = sum(r.bytes for r in self._runs.values())
        for run_id in list(self._runs):
            over_count = len(self._runs) > self.max_runs
            over_bytes = self.max_bytes > 0 and total > self.max_bytes
            if not (over_count or over_bytes):
                return
            if run_id not in protected:
                total -= self._runs.pop(run_id).bytes


def freeze(value: Any) -> Any:
    """What a capture keeps: a value no later node or run can change under it.

    Nodes never write to their inputs (nodes that must declare ``mutates_inputs`` and the
    engine hands them copies), so a fresh output tensor is kept as it is. What a later run
    changes in place (trainable parameters, a layer's state) is copied.
    """
    if isinstance(value, torch.Tensor):
        # A trainable leaf (a weight) or a view of one changes when a later run trains it.
        shares_weights = value.requires_grad and (value.is_leaf or value._base is not None)
        value = value.detach()
        return value.clone() if shares_weights else value
    if isinstance(value, torch.nn.Module):
        try:
            return copy.deepcopy(value)
        except Exception:  # a module that cannot be copied is kept as it is
            return value
    if isinstance(value, dict):
        return {k: freeze(v) for k, v in value.items()}
    if isinstance(value, list):
        return [freeze(v) for v in value]
    if isinstance(value, tuple):
        return tuple(freeze(v) for v in value)
    return value


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, torch.nn.Module):
        yield from value.parameters()
        yield from value.buffers()
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)


def _count(value: Any, storages: dict[tuple[str, int], int]) -> None:
    for t in _tensors(value):
        storage = t.untyped_storage()
        storages.setdefault((str(t.device), storage.data_ptr()), storage.nbytes())


_store: CaptureStore | None = None
_store_lock = threading.Lock()


def get_store() -> CaptureStore:
    """The server-wide store, created on first use from the settings."""
    global _store
    with _store_lock:
        if _store is None:
            _store = MemoryCaptureStore()
        return _store


def set_store(store: CaptureStore | None) -> None:
    """Replace the server-wide store (tests, or a deployment with another store)."""
    global _store
    with _store_lock:
        _store = store
