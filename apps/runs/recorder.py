"""A server run's record: engine events become its Run row's status, nodes and log.

``Recorder`` keeps what each event changes in memory and writes the row in batches (at once
when the run ends, otherwise at most every 0.25 s); ``FLUSHER``, one thread, writes what a quiet
stretch left unwritten. service.py makes one recorder per run and hands it the listeners
(``service.add_listener``), which hear every event after it is recorded.
"""
from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone as dt_timezone
from typing import Any, Callable, Sequence

from .engine import events as ev
from .models import Run

log = logging.getLogger("codefyui.runs")


class Recorder:
    """Engine events -> the Run row, then the listeners. Statuses and log rows are kept here
    and written in batches: at once when the run ends, otherwise at most every 0.25 s (a
    flusher writes what a quiet stretch left), so an event costs O(1) whatever the graph's
    size and a short run costs one write. Readers that need the newest state use ``overlay``."""

    EVERY_S = 0.25

    def __init__(self, run_id: str, listeners: Sequence[Callable[[ev.Event], None]] = ()):
        self.run_id = run_id
        self.listeners = listeners   # the server's (service.add_listener): each hears every event once kept
        self.nodes: dict[str, dict[str, Any]] = {}
        self.log: list[dict[str, Any]] = []
        self.fields: dict[str, Any] = {}
        self.paused = False   # paused for a stand-in worker (WorkerPool): the page says so, the row does not
        self._dirty = False
        self._written = time.monotonic()  # the row's insert: a run that ends within 0.25 s costs one write
        self._lock = threading.Lock()

    def __call__(self, event: ev.Event) -> None:
        with self._lock:
            now_too = self._record(event)
            if now_too or (self._dirty and time.monotonic() - self._written >= self.EVERY_S):
                self._write()
            elif self._dirty:
                FLUSHER.watch(self)
        for listener in list(self.listeners):
            try:
                listener(event)
            except Exception:
                log.exception("run listener failed")

    def _record(self, event: ev.Event) -> bool:
        """Keep what the event changes; True when the row must be written at once."""
        entry = ev.log_entry(event)
        if entry:
            self.log.append(entry)
            self._dirty = True
        if event.kind == ev.LOG and "paused" in (event.data or {}):
            self.paused = event.data["paused"]
        if event.kind == ev.RUN_STARTED:
            self.fields.update(status=Run.Status.RUNNING, started=_when(event),
                               device=(event.data or {}).get("device", ""))
            self._dirty = True
            return False
        if event.kind in ev.TERMINAL_STATUS:
            self.fields.update(status=ev.TERMINAL_STATUS[event.kind], error=event.error or "",
                               finished=_when(event))
            return True
        if event.kind == ev.PROGRESS and event.node_id:
            self.nodes.setdefault(event.node_id, {"status": "running"})["progress"] = event.data
            self._dirty = True
        elif event.node_id and event.kind.startswith("node_"):
            node = {"status": event.kind.removeprefix("node_")}
            if event.error:
                node["error"] = event.error
            if event.summary is not None:
                node["summary"] = event.summary
            if "progress" in self.nodes.get(event.node_id, {}):  # the Training pane reads it after the run too
                node["progress"] = self.nodes[event.node_id]["progress"]
            self.nodes[event.node_id] = node
            self._dirty = True
        return False

    def _write(self) -> None:
        Run.objects.filter(pk=self.run_id).update(nodes=self.nodes, log=self.log, **self.fields)
        self._dirty, self._written = False, time.monotonic()

    def flush(self) -> None:
        with self._lock:
            if self._dirty:
                self._write()

    def overlay(self, run: Run) -> None:
        with self._lock:
            run.nodes, run.log, run.paused = dict(self.nodes), list(self.log), self.paused
            for name, value in self.fields.items():
                setattr(run, name, value)


def _when(event: ev.Event) -> datetime:
    """When the event happened in its run (its worker's clock is this machine's): events come
    in batches, so the moment one is read says less (a short run's start and end arrive together)."""
    return datetime.fromtimestamp(event.time, tz=dt_timezone.utc)


class Flusher:
    """One thread that writes the rows recorders left unwritten after a quiet stretch."""

    def __init__(self) -> None:
        self._pending: set[Recorder] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, recorder: Recorder) -> None:
        with self._lock:
            self._pending.add(recorder)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True, name="run-records")
                self._thread.start()

    def _loop(self) -> None:
        while True:
            time.sleep(Recorder.EVERY_S)
            with self._lock:
                pending, self._pending = self._pending, set()
            for recorder in pending:
                try:
                    recorder.flush()
                except Exception:   # e.g. a locked database: tried again next round, not left stale
                    log.exception("could not write run %s", recorder.run_id)
                    self.watch(recorder)


FLUSHER = Flusher()
