"""Housekeeping of the runs' records: old runs pruned, and runs a previous server left unfinished.

``prune_runs`` deletes a student's finished runs past CODEFYUI_MAX_RUNS_PER_USER (with their
captures); ``PRUNER`` is the thread that does it once a minute for the students who started a
run since (service.start_workers starts it, each run's start notes its owner);
``mark_interrupted_runs`` is the start-up's (codefyui/asgi.py).
"""
from __future__ import annotations

import logging
import threading

from django.db import connections
from django.utils import timezone

from codefyui import conf

from .models import Run
from .store import get_store

log = logging.getLogger("codefyui.runs")


def prune_runs(owner_pk: int) -> int:
    """Delete the owner's finished runs older than their newest CODEFYUI_MAX_RUNS_PER_USER
    (with their captures); how many went. A run still queued or running is never deleted."""
    older = Run.objects.filter(owner_id=owner_pk).order_by("-created")[max(0, conf.MAX_RUNS_PER_USER):]
    stale = [pk for pk, status in older.values_list("pk", "status") if status not in Run.UNFINISHED]
    store = get_store()
    for start in range(0, len(stale), 500):   # within every database's limit on query parameters
        chunk = stale[start:start + 500]
        for pk in chunk:
            store.drop_run(str(pk))
        Run.objects.filter(pk__in=chunk).delete()
    return len(stale)


class Pruner:
    """While the server runs (``service.start_workers``), a thread that every EVERY_S prunes
    the runs of the students who started one since (``prune_runs``): a run's start costs
    nothing more, and a script that runs in a loop cannot fill the server's disk with run
    records."""

    EVERY_S = 60.0

    def __init__(self) -> None:
        self._owners: set[int] = set()
        self._lock = threading.Lock()
        self._stop: threading.Event | None = None

    def note(self, owner_pk: int) -> None:
        with self._lock:
            self._owners.add(owner_pk)

    def sweep(self) -> None:
        with self._lock:
            owners, self._owners = self._owners, set()
        try:
            for owner_pk in owners:
                try:
                    prune_runs(owner_pk)
                except Exception:
                    log.exception("could not prune the runs of user %s", owner_pk)
        finally:
            connections.close_all()   # this thread holds no connection between sweeps

    def start(self) -> None:
        self.stop()
        self._stop = stop = threading.Event()
        threading.Thread(target=self._loop, args=(stop,), daemon=True, name="run-pruner").start()

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None

    def _loop(self, stop: threading.Event) -> None:
        while not stop.wait(self.EVERY_S):
            self.sweep()


PRUNER = Pruner()


def mark_interrupted_runs() -> int:
    """Runs a previous server process left unfinished can never finish: say so, for the run
    and for each node that was running or queued in it."""
    runs = list(Run.objects.filter(status__in=Run.UNFINISHED).only("pk", "nodes"))
    for run in runs:
        nodes = {node: {**state, "status": "interrupted"} if state.get("status") in ("running", "queued") else state
                 for node, state in (run.nodes or {}).items()}
        Run.objects.filter(pk=run.pk, status__in=Run.UNFINISHED).update(
            status=Run.Status.INTERRUPTED, error="The server restarted before this run finished.",
            finished=timezone.now(), nodes=nodes)
    return len(runs)
