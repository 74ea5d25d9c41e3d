"""The one place that starts, stops and deletes runs.

Views, the JSON API and the CLI call these functions; none of them talks to the engine or
the capture store directly. A server run goes: ``start_run`` validates the document and
creates a queued Run row, a bounded thread pool picks it up, the engine runs it, and the
``_Recorder`` turns engine events into Run-row updates and hands them to listeners (the
live-progress push subscribes there).
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from django.db import close_old_connections, transaction
from django.utils import timezone

from apps.graphs.document import run_settings, seed_value
from codefyui import conf

from . import engine
from .engine import events as ev
from .models import Run
from .store import get_store

log = logging.getLogger("codefyui.runs")


class RunRefused(Exception):
    """The run cannot start; ``problems`` lists why, in words a student understands."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


class RunConflict(Exception):
    """The run is in a state that does not allow this action."""


# -- options ------------------------------------------------------------------------------

_OPTION_FIELDS = {"record": "record_outputs", "verbose": "verbose_internals",
                  "gradients": "capture_gradients", "seed": "seed",
                  "deterministic": "deterministic", "device": "device", "persist_weights": "persist_weights"}


def run_options(doc: dict[str, Any], overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The options a run uses: the document's settings, then what the request sends."""
    settings = run_settings(doc)
    options = {name: settings[key] for name, key in _OPTION_FIELDS.items()}
    problems = []
    for name, value in (overrides or {}).items():
        if name not in _OPTION_FIELDS:
            problems.append(f"Unknown run option '{name}'")
        elif name == "seed":
            try:
                options["seed"] = seed_value(value)
            except ValueError as exc:
                problems.append(f"seed {exc}")
        elif name == "device":
            if not isinstance(value, str) or not value.strip():
                problems.append("device must be text such as 'cpu' or 'cuda'")
            else:
                options["device"] = value.strip()
        elif not isinstance(value, bool):
            problems.append(f"{name} must be true or false")
        else:
            options[name] = value
    if problems:
        raise RunRefused(problems)
    return options


def plan(doc: dict[str, Any]) -> engine.Plan:
    try:
        return engine.plan_run(doc)
    except engine.DraftGraph as exc:
        raise RunRefused([str(exc)]) from None
    except engine.InvalidGraph as exc:
        raise RunRefused(exc.problems) from None


# -- running without a server (the CLI) ----------------------------------------------------

def run_now(doc: dict[str, Any], options: dict[str, Any], emit: Callable[[ev.Event], None] | None = None,
            run_id: str = "cli") -> engine.RunOutcome:
    """Plan and run a document in this thread; nothing is captured or stored."""
    planned = plan(doc)
    run_opts = engine.RunOptions(run_id=run_id, **{**options, "record": False})
    return engine.execute(planned, run_opts, emit or (lambda event: None))


# -- server runs ---------------------------------------------------------------------------

_pool = ThreadPoolExecutor(max_workers=max(1, conf.MAX_CONCURRENT_RUNS), thread_name_prefix="runs")
_cancels: dict[str, threading.Event] = {}
_cache = engine.ExecutionCache()  # one for the server, a scope per user (CODEFYUI_EXECUTION_CACHE_MAX_MB)
_listeners: list[Callable[[ev.Event], None]] = []
_lock = threading.Lock()


def add_listener(listener: Callable[[ev.Event], None]) -> None:
    """Receive every engine event of every server run (called from run threads)."""
    _listeners.append(listener)


def start_run(user, doc: dict[str, Any], graph=None, overrides: dict[str, Any] | None = None,
              weights_scope: str = "") -> Run:
    """Validate, record a queued Run and hand it to the run pool. Raises RunRefused.
    ``weights_scope`` names whose kept layers Persist weights between runs reuses."""
    options = run_options(doc, overrides)
    planned = plan(doc)
    run = Run.objects.create(owner=user, graph=graph, options=options,
                             graph_name=(graph.name if graph else doc.get("name", ""))[:200])
    cancel = threading.Event()
    with _lock:
        _cancels[str(run.id)] = cancel
    cache = _cache.scope(user.pk)
    engine_options = {**options, "weights_scope": weights_scope or (f"graph-{graph.pk}" if graph else "")}
    transaction.on_commit(lambda: _pool.submit(_execute, run.pk, planned, engine_options, cancel, cache))
    return run


def reset_weights(weights_scope: str) -> int:
    """Reset all weights now: drop every kept layer of a tab; returns how many."""
    return engine.WEIGHTS.reset(weights_scope)


def kept_weights(weights_scope: str) -> int:
    return engine.WEIGHTS.count(weights_scope)


def cancel_run(run: Run) -> Run:
    """Stop a queued or running run (a running node finishes first)."""
    if run.is_finished:
        raise RunConflict(f"This run has already {run.status}.")
    with _lock:
        cancel = _cancels.get(str(run.id))
    if cancel is not None:
        cancel.set()
    else:  # not in this process any more: nothing will finish it
        Run.objects.filter(pk=run.pk, status__in=Run.UNFINISHED).update(
            status=Run.Status.CANCELLED, finished=timezone.now())
    run.refresh_from_db()
    return run


def delete_run(run: Run) -> None:
    """Delete a finished run and drop its captures."""
    if not run.is_finished:
        raise RunConflict("Stop the run before deleting it.")
    get_store().drop_run(str(run.id))
    run.delete()


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


def wait_for(run_id, timeout: float = 30.0) -> Run:
    """Block until a run has finished (tests and scripts)."""
    deadline = time.monotonic() + timeout
    while True:
        run = Run.objects.get(pk=run_id)
        if run.is_finished or time.monotonic() > deadline:
            return run
        time.sleep(0.02)


def _execute(run_pk, planned: engine.Plan, options: dict[str, Any], cancel: threading.Event,
             cache: engine.CacheScope) -> None:
    run_id = str(run_pk)
    recorder = _Recorder(run_pk)
    try:
        if cancel.is_set():
            recorder.finish("cancelled", "Execution cancelled")
        else:
            engine.execute(planned, engine.RunOptions(run_id=run_id, **options), recorder,
                           captures=get_store(), cancel=cancel, cache=cache)
    except Exception:  # never leave a run "running" forever
        log.exception("run %s crashed", run_id)
        recorder.finish("failed", "The server hit an unexpected problem while running this graph.")
    finally:
        with _lock:
            _cancels.pop(run_id, None)
        close_old_connections()


class _Recorder:
    """Engine events -> the Run row, then the listeners. The row is written before an event
    is pushed, so a client that (re)connects and reads the row misses nothing."""

    def __init__(self, run_pk):
        self.run_pk = run_pk
        self.nodes: dict[str, dict[str, Any]] = {}
        self.log: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, event: ev.Event) -> None:
        with self._lock:
            self._record(event)
        for listener in list(_listeners):
            try:
                listener(event)
            except Exception:
                log.exception("run listener failed")

    def _record(self, event: ev.Event) -> None:
        fields: dict[str, Any] = {}
        entry = ev.log_entry(event)
        if entry:
            self.log.append(entry)
        if event.kind == ev.RUN_STARTED:
            fields = {"status": Run.Status.RUNNING, "started": timezone.now(),
                      "device": (event.data or {}).get("device", "")}
        elif event.kind in ev.TERMINAL_STATUS:
            fields = {"status": ev.TERMINAL_STATUS[event.kind], "error": event.error or "",
                      "finished": timezone.now()}
        elif event.node_id and event.kind.startswith("node_"):
            node = {"status": event.kind.removeprefix("node_")}
            if event.error:
                node["error"] = event.error
            if event.summary is not None:
                node["summary"] = event.summary
            self.nodes[event.node_id] = node
        elif not entry:
            return
        Run.objects.filter(pk=self.run_pk).update(nodes=self.nodes, log=self.log, **fields)

    def finish(self, status: str, error: str) -> None:
        with self._lock:
            Run.objects.filter(pk=self.run_pk).update(status=status, error=error, finished=timezone.now(),
                                                     nodes=self.nodes, log=self.log)


def cache_usage() -> dict[str, int]:
    """The execution cache's entries, users (scopes) and bytes against its budget."""
    return _cache.usage()


def clear_cache() -> None:
    _cache.clear()
