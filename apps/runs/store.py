"""The capture store: every completed node's outputs, keyed by (run, node, port).

``CaptureStore`` is the interface the engine writes to and the Inspector reads from;
``MemoryCaptureStore`` is the server-wide default: the newest ``max_runs`` runs within
``max_bytes``, whole runs evicted oldest-first, never a run still being written. Runs are
evicted only to make room for a capture that is kept: a run that would outgrow the budget
by itself stops recording instead (RecordingStopped) and keeps what it has. A worker
box will later answer reads remotely through the same interface, raising StoreUnreachable
while it is away. No Django here.

Shares: a run opens with the ``Share`` of its owner's class (``apps/runs/shares.py`` finds
it when the run is queued). Each class keeps its newest ``max_runs`` runs within its own
budget (the MB an administrator gave the class, else ``CODEFYUI_CLASS_STORE_SHARE`` per cent
of the store) and evicts only its own runs; students without a class share the rest.
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
class Share:
    """The part of the store a run's captures take: a class's (``key``, and ``max_mb`` when an
    administrator gave the class its own size) or, with the empty key, the rest's."""
    key: str = ""
    max_mb: int | None = None


REST = Share()


@dataclass(frozen=True)
class Capture:
    value: Any
    serial: int  # grows on every write; derived caches (stats) key on it


class CaptureStore(ABC):
    @abstractmethod
    def open_run(self, run_id: str, share: Share | None = None) -> None:
        """A run starts writing, its captures in ``share`` (None: the rest's); it is never
        evicted until closed."""

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
    share: str = ""                                                # its Share's key

    def recount(self) -> None:
        self.storages = {}
        for capture in self.slots.values():
            count_storages(capture.value, self.storages)
        self.bytes = sum(self.storages.values())


@dataclass
class _Part:
    """One share's runs, oldest first, and what they hold."""
    max_mb: int | None = None   # the class's own size; None: the setting's per cent
    runs: OrderedDict[str, None] = field(default_factory=OrderedDict)
    bytes: int = 0
    active: int = 0             # when it last opened a run (a counter): the store's overflow order


class MemoryCaptureStore(CaptureStore):
    def __init__(self, max_runs: int | None = None, max_bytes: int | None = None, class_share: int | None = None):
        self.max_runs = conf.RUN_OUTPUT_STORE_MAX_RUNS if max_runs is None else max_runs
        self.max_bytes = conf.RUN_OUTPUT_STORE_MAX_MB * 2**20 if max_bytes is None else max_bytes
        self.class_share = min(100, max(0, conf.CLASS_STORE_SHARE if class_share is None else class_share))
        self._runs: OrderedDict[str, _Run] = OrderedDict()   # oldest first (by first write)
        self._parts: dict[str, _Part] = {}                  # share key -> its runs; "" the rest's
        self._bytes = 0                                     # of every run held: a put costs O(1), not O(runs)
        self._open: set[str] = set()
        self._serial = itertools.count(1)
        self._clock = itertools.count(1)
        self._lock = threading.Lock()

    def open_run(self, run_id: str, share: Share | None = None) -> None:
        with self._lock:
            self._open.add(run_id)
            run = self._runs.get(run_id) or self._add(run_id, share)
            self._evict(run.share)

    def close_run(self, run_id: str) -> None:
        with self._lock:
            self._open.discard(run_id)
            run = self._runs.get(run_id)
            self._evict(run.share if run else "")

    def _add(self, run_id: str, share: Share | None) -> _Run:
        """A new run, last of its share: a class's, or the rest's (no class, or a class with no
        size of its own while the setting gives classes none)."""
        share = share or REST
        key = share.key if share.max_mb is not None or self.class_share else ""
        part = self._parts.get(key) or self._parts.setdefault(key, _Part())
        part.max_mb, part.active = share.max_mb, next(self._clock)
        part.runs[run_id] = None
        run = self._runs[run_id] = _Run(share=key)
        return run

    def _budget(self, key: str) -> int:
        """A share's bytes (0: no byte budget). A class: its own size, else the setting's per
        cent of the store. The rest: what the classes holding runs leave, at least one class's share."""
        if self.max_bytes <= 0:
            return 0
        one_share = max(1, self.max_bytes * self.class_share // 100)
        if key:
            max_mb = self._parts[key].max_mb
            return max_mb * 2**20 if max_mb is not None else one_share
        reserved = sum(self._budget(k) for k, part in self._parts.items() if k and part.runs)
        return max(self.max_bytes - reserved, one_share)

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
            run = self._add(run_id, None)
        elif run.stopped:
            run.refused.add(slot)
            return
        before = run.bytes
        fresh, held = _would_hold(run, slot, frozen)
        budget = self._budget(run.share)
        if budget > 0:
            writing = sum(self._runs[other].bytes for other in self._open
                          if other != run_id and other in self._runs and self._runs[other].share == run.share)
            if held + writing > budget:
                if run.slots.pop(slot, None) is not None:  # never leave an older value behind
                    run.recount()
                    self._grew(run, before)
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
        self._grew(run, before)
        self._evict(run.share, keep=run_id)

    def _grew(self, run: _Run, before: int) -> None:
        self._bytes += run.bytes - before
        self._parts[run.share].bytes += run.bytes - before

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
            return self._drop(run_id)

    def usage(self) -> dict[str, int]:
        """Runs and bytes held; ``max_runs`` counts ``max_runs`` for each share holding runs."""
        with self._lock:
            return {"runs": len(self._runs), "max_runs": self.max_runs * max(1, len(self._parts)),
                    "bytes": self._bytes, "max_bytes": self.max_bytes}

    def _drop(self, run_id: str) -> bool:
        run = self._runs.pop(run_id, None)
        if run is None:
            return False
        self._bytes -= run.bytes
        part = self._parts[run.share]
        part.bytes -= run.bytes
        del part.runs[run_id]
        if not part.runs:
            del self._parts[run.share]
        return True

    def _evict(self, key: str, keep: str | None = None) -> None:
        """Drop whole runs, oldest first, never one being written: first the share's own, until
        it holds its newest ``max_runs`` runs within its budget; then, while the whole store is
        over its size (the classes' shares add up to more than the store), runs of the other
        shares: one over its budget first, then the one that opened a run longest ago."""
        part, budget = self._parts.get(key), self._budget(key) if key in self._parts else 0
        over = part is not None and (len(part.runs) > self.max_runs or 0 < budget < part.bytes)
        if not over and not 0 < self.max_bytes < self._bytes:
            return   # most writes: nothing to drop, and no copy of the open runs
        protected = self._open | ({keep} if keep else set())
        while part is not None and (len(part.runs) > self.max_runs or 0 < budget < part.bytes):
            if not self._drop_oldest(part, protected):
                break
            part = self._parts.get(key)
        while 0 < self.max_bytes < self._bytes:
            givers = sorted((self._budget(k) >= other.bytes, k == key, other.active, k)
                            for k, other in self._parts.items() if any(r not in protected for r in other.runs))
            if not givers or not self._drop_oldest(self._parts[givers[0][3]], protected):
                return

    def _drop_oldest(self, part: _Part, protected: set[str]) -> bool:
        """Drop the share's oldest run not being written; False when every one is."""
        oldest = next((run_id for run_id in part.runs if run_id not in protected), None)
        return oldest is not None and self._drop(oldest)


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
