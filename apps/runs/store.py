"""The capture store: every completed node's outputs, keyed by (run, node, port).

``CaptureStore`` is the interface the engine writes to and the Inspector reads from;
``MemoryCaptureStore`` is the server-wide default: the newest ``max_runs`` runs within
``max_bytes``, whole runs evicted oldest-first, never a run still being written. Runs are
evicted only to make room for a capture that is kept: a run that would outgrow the budget
by itself stops recording instead (RecordingStopped) and keeps what it has. A worker
box will later answer reads remotely through the same interface, raising StoreUnreachable
while it is away. No Django here.
"""
from __future__ import annotations

import copy
import importlib
import itertools
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import torch

from codefyui import conf

from .engine.events import shares_weights
from .engine.storage import RecordingStopped, StorageKey, count_storages


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
    def put(self, run_id: str, node_id: str, port: str, value: Any) -> None:
        """Keep a capture; raises RecordingStopped, once per run, when the run's captures
        outgrow the budget (that one and the run's later ones are then refused)."""

    def put_many(self, run_id: str, items: list[tuple[str, str, Any]]) -> None:
        """Keep several captures, (node, port, value) in order, as ``put`` would one by one: a
        RecordingStopped among them is raised once, after the later ones were refused."""
        stopped = None
        for node_id, port, value in items:
            try:
                self.put(run_id, node_id, port, value)
            except RecordingStopped as stop:
                stopped = stopped or stop
        if stopped is not None:
            raise stopped

    @abstractmethod
    def get(self, run_id: str, node_id: str, port: str) -> Capture | None:
        """The capture, or None when the store holds nothing for that port."""

    def refused(self, run_id: str, node_id: str, port: str) -> bool:
        """Whether the port went unkept because its run's recording stopped (RecordingStopped)."""
        return False

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
    storages: dict[StorageKey, int] = field(default_factory=dict)  # storage -> bytes, counted once
    bytes: int = 0
    stopped: bool = False                                          # recording stopped: it outgrew the budget
    refused: set[tuple[str, str]] = field(default_factory=set)     # ports not kept since then

    def recount(self) -> None:
        self.storages = {}
        for capture in self.slots.values():
            count_storages(capture.value, self.storages)
        self.bytes = sum(self.storages.values())


class MemoryCaptureStore(CaptureStore):
    def __init__(self, max_runs: int | None = None, max_bytes: int | None = None):
        self.max_runs = conf.RUN_OUTPUT_STORE_MAX_RUNS if max_runs is None else max_runs
        self.max_bytes = conf.RUN_OUTPUT_STORE_MAX_MB * 2**20 if max_bytes is None else max_bytes
        self._runs: OrderedDict[str, _Run] = OrderedDict()   # oldest first (by first write)
        self._bytes = 0                                     # of every run held: a put costs O(1), not O(runs)
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
        """Keep a capture, evicting older runs to make room for it. A capture that cannot fit
        even then (this run and the other runs still being written would exceed the budget)
        evicts nothing: the run's recording stops, RecordingStopped says so once, and this
        and every later port of the run are refused (``refused`` names them)."""
        self.put_many(run_id, [(node_id, port, value)])

    def put_many(self, run_id: str, items: list[tuple[str, str, Any]]) -> None:
        """``put`` for each, frozen first and kept under one lock (a node's outputs, a run's gradients)."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is not None and run.stopped:
                run.refused.update((node_id, port) for node_id, port, _ in items)
                return
        frozen = [((node_id, port), freeze(value)) for node_id, port, value in items]
        stopped = None
        with self._lock:
            for slot, value in frozen:
                try:
                    self._keep(run_id, slot, value)
                except RecordingStopped as stop:
                    stopped = stopped or stop
        if stopped is not None:
            raise stopped

    def _keep(self, run_id: str, slot: tuple[str, str], frozen: Any) -> None:
        """``put``'s work, under the lock."""
        run = self._runs.get(run_id)
        if run is None:
            run = self._runs[run_id] = _Run()
        elif run.stopped:
            run.refused.add(slot)
            return
        before = run.bytes
        fresh, held = _would_hold(run, slot, frozen)
        if self.max_bytes > 0:
            writing = sum(self._runs[other].bytes for other in self._open if other != run_id and other in self._runs)
            if held + writing > self.max_bytes:
                if run.slots.pop(slot, None) is not None:  # never leave an older value behind
                    run.recount()
                    self._bytes += run.bytes - before
                run.stopped = True
                run.refused.add(slot)
                raise RecordingStopped(run.bytes)
        overwrite = slot in run.slots
        run.slots[slot] = Capture(frozen, next(self._serial))
        if overwrite:
            run.recount()
        else:
            run.storages.update(fresh)
            run.bytes = held
        self._bytes += run.bytes - before
        self._evict(keep=run_id)

    def refused(self, run_id: str, node_id: str, port: str) -> bool:
        with self._lock:
            run = self._runs.get(run_id)
            return run is not None and (node_id, port) in run.refused

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
            run = self._runs.pop(run_id, None)
            if run is not None:
                self._bytes -= run.bytes
            return run is not None

    def usage(self) -> dict[str, int]:
        with self._lock:
            return {"runs": len(self._runs), "max_runs": self.max_runs,
                    "bytes": self._bytes, "max_bytes": self.max_bytes}

    def _over(self) -> bool:
        return len(self._runs) > self.max_runs or (self.max_bytes > 0 and self._bytes > self.max_bytes)

    def _evict(self, keep: str | None = None) -> None:
        """Drop whole runs, oldest first, until both budgets hold (open runs are never dropped)."""
        if not self._over():
            return
        protected = self._open | ({keep} if keep else set())
        while self._over():   # a full store drops one run for each run that opens: no copy of the whole list
            oldest = next((run_id for run_id in self._runs if run_id not in protected), None)
            if oldest is None:
                return
            self._bytes -= self._runs.pop(oldest).bytes


def _would_hold(run: _Run, slot: tuple[str, str], value: Any) -> tuple[dict[StorageKey, int], int]:
    """The storages ``value`` adds to the run, and the bytes the run would then hold."""
    added: dict[StorageKey, int] = {}
    count_storages(value, added)
    fresh = {k: n for k, n in added.items() if k not in run.storages}
    if slot not in run.slots:
        return fresh, run.bytes + sum(fresh.values())
    storages: dict[StorageKey, int] = {}  # a loop node rewrote its port: count what would remain
    for other, capture in run.slots.items():
        if other != slot:
            count_storages(capture.value, storages)
    count_storages(value, storages)
    return fresh, sum(storages.values())


def freeze(value: Any) -> Any:
    """What a capture keeps: a value no later node or run can change under it.

    Nodes never write to their inputs (nodes that must declare ``mutates_inputs`` and the
    engine hands them copies), so a fresh output tensor is kept as it is. What a later run
    changes in place (trainable parameters, a layer's state) is copied.
    """
    if isinstance(value, torch.Tensor):
        if not value.requires_grad:   # no graph to detach it from (most captures: a worker's outputs)
            return value
        frozen = value.detach()
        return frozen.clone() if shares_weights(value) else frozen
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


_store: CaptureStore | None = None
_store_lock = threading.Lock()


def store_class() -> type[CaptureStore]:
    """The CaptureStore class CODEFYUI_RUN_OUTPUT_STORE_CLASS names (checked at start-up)."""
    path = conf.RUN_OUTPUT_STORE_CLASS
    module, _, name = path.rpartition(".")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise RuntimeError(f"CODEFYUI_RUN_OUTPUT_STORE_CLASS: cannot import {path!r} ({exc})") from None
    if not (isinstance(found, type) and issubclass(found, CaptureStore)):
        raise RuntimeError(f"CODEFYUI_RUN_OUTPUT_STORE_CLASS: {path!r} is not a CaptureStore")
    return found


def get_store() -> CaptureStore:
    """The server-wide store, created on first use from the settings."""
    global _store
    with _store_lock:
        if _store is None:
            _store = store_class()()
        return _store


def set_store(store: CaptureStore | None) -> None:
    """Replace the server-wide store (tests, or a deployment with another store)."""
    global _store
    with _store_lock:
        _store = store
