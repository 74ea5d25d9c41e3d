"""The one place that starts, stops and deletes runs.

Views, the JSON API and the CLI call these functions; none of them talks to the engine or
the capture store directly. A server run goes: ``start_run`` validates the document and
creates a queued Run row, the fair queue (round-robin across students) hands it to a run
worker process (apps/runs/workers.py) with the owner's cache hits and kept layers, the
engine runs it there, and its recorder (recorder.py) turns the events that come back into
Run-row updates (batched) and hands them to listeners (the live-progress push subscribes
there). Pruning old runs and marking interrupted ones is housekeeping.py's.
"""
from __future__ import annotations

import asyncio
import copy
import logging
import os
import re
import threading
from typing import Any, Callable, Collection

from cachetools import FIFOCache
from django.db import close_old_connections, transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.utils import timezone

from apps.graphs.document import run_settings, seed_value
from apps.graphs.models import PackSwitch
from apps.graphs.nodes.base import registry
from apps.graphs.nodes.packs import installed, pack_name
from codefyui import conf
from codefyui.fairqueue import FairQueue
from codefyui.memo import ByContent

from . import engine, shares, workers
from .engine import events as ev
from .housekeeping import PRUNER
from .models import Run, ScriptNodes
from .recorder import Recorder
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
                  "gradients": "capture_gradients", "auto_loss": "auto_synthesize_loss", "seed": "seed",
                  "deterministic": "deterministic", "device": "device", "persist_weights": "persist_weights"}


_DEVICE = re.compile(r"auto|cpu|mps|cuda(:\d{1,2})?", re.IGNORECASE)   # what a request may name


def run_options(doc: dict[str, Any], overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The options a run uses: the document's settings, then what the request sends."""
    settings = run_settings(doc)
    options = {name: settings[key] for name, key in _OPTION_FIELDS.items()}
    problems = []
    unknown = [name for name in (overrides or {}) if name not in _OPTION_FIELDS]
    if unknown:   # named once, however many a script sent
        shown = ", ".join(f"'{name[:40]}'" for name in unknown[:3])
        more = f" and {len(unknown) - 3:,} more" if len(unknown) > 3 else ""
        problems.append(f"Unknown run option{'s' if len(unknown) > 1 else ''} {shown}{more}; "
                        f"a run takes {', '.join(_OPTION_FIELDS)}")
    for name, value in (overrides or {}).items():
        if name == "seed":
            try:
                options["seed"] = seed_value(value)
            except ValueError as exc:
                problems.append(f"seed {exc}")
        elif name == "device":
            if not isinstance(value, str) or not _DEVICE.fullmatch(value.strip()):
                problems.append("device must be auto, cpu, cuda, cuda:0 (or another GPU's number) or mps")
            else:
                options["device"] = value.strip().lower()
        elif name not in _OPTION_FIELDS:
            continue   # named above
        elif not isinstance(value, bool):
            problems.append(f"{name} must be true or false")
        else:
            options[name] = value
    if problems:
        raise RunRefused(problems)
    return options


# A class runs one lesson's example at once: its plan is made once (and shared, read only).
# A plan depends on the nodes and packs this process knows too (fixed once it has started;
# tests add their own).
_plans = ByContent(engine.plan_run)


def plan(doc: dict[str, Any], enabled: Collection[str] | None = None) -> engine.Plan:
    """The run's plan, or RunRefused saying why. ``enabled``: the packs the administrator has
    on (``PackSwitch.enabled_packs()``; None: every installed one)."""
    try:
        return _plans(doc, None if enabled is None else frozenset(enabled),
                      depends=(len(registry()), tuple(installed())))
    except engine.DraftGraph as exc:
        raise RunRefused([str(exc)]) from None
    except engine.InvalidGraph as exc:
        raise RunRefused(exc.problems) from None


# -- running without a server (the CLI) ----------------------------------------------------

def run_now(doc: dict[str, Any], options: dict[str, Any], emit: Callable[[ev.Event], None] | None = None,
            run_id: str = "cli") -> engine.RunOutcome:
    """Plan and run a document in this thread; nothing is captured or stored."""
    planned = plan(doc)  # the CLI runs every installed pack: the switches are the web server's
    run_opts = engine.RunOptions(run_id=run_id, **{**options, "record": False})
    return engine.execute(planned, run_opts, emit or (lambda event: None))


# -- server runs ---------------------------------------------------------------------------

class _LiveRun:
    """A server run from start_run until it has ended: its row as inserted, its job, its
    recorder, who waits."""

    def __init__(self, run: Run, job: workers.Job, cache):
        self.run, self.job, self.cache = run, job, cache
        self.recorder = Recorder(job.run_id, _listeners)
        self.ended = threading.Event()
        self.waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []

    @property
    def owner_pk(self) -> int:
        return self.run.owner_id

    def snapshot(self) -> Run:
        """The run as its recorder knows it now, a copy of its own (start_run's caller keeps the row)."""
        run = copy.copy(self.run)
        self.recorder.overlay(run)
        return run

    def wake_waiters(self) -> None:
        self.ended.set()
        for loop, future in list(self.waiters):
            try:
                loop.call_soon_threadsafe(lambda f=future: f.done() or f.set_result(None))
            except RuntimeError:  # that loop has closed: nobody waits there any more
                pass


class _Scheduler:
    """The fair queue in front of the executor: round-robin across students, and at most
    CODEFYUI_MAX_CONCURRENT_RUNS runs computing at once."""

    def __init__(self) -> None:
        self.queue = FairQueue()
        self.live: dict[str, _LiveRun] = {}
        self.ended, self.ended_lock = FIFOCache(maxsize=ENDED_KEPT), threading.Lock()   # the last runs ended here
        self.computing = 0
        self.lock = threading.RLock()
        self.executor: workers.WorkerPool | workers.InProcessExecutor = workers.InProcessExecutor(self.dispatch)

    def submit(self, live: _LiveRun) -> None:
        with self.lock:
            self.live[live.job.run_id] = live
            self.queue.push(live.owner_pk, live)
        self.dispatch()

    def dispatch(self) -> None:
        if self.executor.broken:
            self._fail_queued(workers.NO_WORKERS)
            return
        with self.lock:
            # a run paused for a stand-in worker holds its place but computes nothing (WorkerPool)
            while (self.queue and self.computing - self.executor.paused() < max(1, conf.MAX_CONCURRENT_RUNS)
                   and self.executor.free()):
                live = self.queue.pop()
                self.computing += 1
                assignment = workers.Assignment(_with_hits(live), live.recorder, get_store(), live.cache, self._ended)
                if not self.executor.run(assignment):  # the worker went away meanwhile
                    self.computing -= 1
                    self.queue.push_front(live.owner_pk, live)
                    return

    def _fail_queued(self, error: str) -> None:
        with self.lock:
            failed = [self.queue.pop() for _ in range(len(self.queue))]
            for live in failed:
                del self.live[live.job.run_id]
        for live in failed:
            live.recorder(ev.Event(ev.RUN_FAILED, live.job.run_id, error=error, level="error"))
            live.wake_waiters()

    def _ended(self, assignment: workers.Assignment) -> None:
        with self.lock:
            self.computing -= 1
            live = self.live.pop(assignment.run_id, None)
        if live is not None:
            live.recorder.flush()  # anything after the ending (its row is written already)
            ended = live.snapshot()   # the row as written last
            with self.ended_lock:
                self.ended[live.job.run_id] = ended
            live.wake_waiters()
        close_old_connections()
        self.dispatch()

    def cancel(self, run_id: str) -> bool:
        """Stop a run of this process; False when it is not one (any more)."""
        with self.lock:
            live = self.live.get(run_id)
            if live is None:
                return False
            queued = self.queue.remove(live)
            if queued:
                del self.live[run_id]
        if queued:  # it never reached a worker: its end is told here
            live.recorder(ev.Event(ev.RUN_STOPPED, run_id, error=workers.STOPPED, level="error"))
            live.wake_waiters()
        else:
            self.executor.cancel(run_id)
        return True


def _with_hits(live: _LiveRun) -> workers.Job:
    """The job as it leaves the queue: with what the owner's cache already holds for it."""
    job = live.job
    if live.cache is not None:
        device = str(engine.resolve_device(job.options.device)[0])
        found = {key: live.cache.get(key) for key in engine.cache_keys(job.plan, job.options, device).values()}
        job.hits = {key: hit for key, hit in found.items() if hit is not None}
    if job.options.persist_weights and job.options.weights_scope:
        job.weights = engine.WEIGHTS.entries(job.options.weights_scope)
    return job


ENDED_KEPT = 256
_runs = _Scheduler()
_cache = engine.ExecutionCache()  # one for the server, a scope per user (CODEFYUI_EXECUTION_CACHE_MAX_MB)
_listeners: list[Callable[[ev.Event], None]] = []
_lock = threading.Lock()


def start_workers(size: int | None = None, spares: int | None = None) -> workers.WorkerPool:
    """Run server runs in a supervised pool of worker processes from now on (the server's
    start-up calls this; without it runs execute in a thread of this process), and prune
    students' old runs (``housekeeping.PRUNER``). ``spares``: workers that take a run only while all the
    others hold long ones (WorkerPool), by default as many as CODEFYUI_MAX_CONCURRENT_RUNS
    leaves room for."""
    size = conf.RUN_WORKERS if size is None else size
    computing = max(1, min(size, conf.MAX_CONCURRENT_RUNS))
    spares = max(0, conf.MAX_CONCURRENT_RUNS - size) if spares is None else spares
    threads = max(1, (os.cpu_count() or 1) // computing)
    pool = workers.WorkerPool(size, conf.RUN_MEMORY_MAX_MB, threads, _runs.dispatch, spares,
                              waiting=lambda: bool(_runs.queue))
    with _runs.lock:
        previous, _runs.executor = _runs.executor, pool
    previous.close()
    pool.start()
    PRUNER.start()
    return pool


def stop_workers() -> None:
    """Back to running in this process (tests)."""
    with _runs.lock:
        previous, _runs.executor = _runs.executor, workers.InProcessExecutor(_runs.dispatch)
    previous.close()
    PRUNER.stop()


def add_listener(listener: Callable[[ev.Event], None]) -> None:
    """Receive every engine event of every server run (called from the runs' reader threads)."""
    _listeners.append(listener)


def start_run(user, doc: dict[str, Any], graph=None, overrides: dict[str, Any] | None = None,
              weights_scope: str = "", origin: str = "") -> Run:
    """Validate, record a queued Run and put it in the fair queue. Raises RunRefused.
    ``weights_scope`` names whose kept layers Persist weights between runs reuses; ``origin``
    where it was started (``Run.origin``)."""
    options = run_options(doc, overrides)
    planned = plan(doc)
    if any(pack_name(node.cls.type) for node in planned.nodes.values()):  # the switches only matter then
        planned = plan(doc, PackSwitch.enabled_packs())
    named = [n.label for n in planned.nodes.values() if n.cls.script]
    scripts = bool(named)  # the switch and the sandbox are asked about only for a graph that needs them
    if scripts and (refusal := ScriptNodes.refusal()):
        raise RunRefused([f"{refusal} Until then this graph cannot run: {', '.join(named)} is a script node."])
    limit = conf.MAX_QUEUED_RUNS_PER_USER
    if _runs.queue.count(user.pk) >= limit:
        raise RunRefused([f"You already have {limit} runs waiting in the queue "
                          f"(CODEFYUI_MAX_QUEUED_RUNS_PER_USER is {limit}). Wait until one of them starts, "
                          "or stop one, then run again."])
    run = Run.objects.create(owner=user, graph=graph, options=options, origin=origin,
                             graph_name=(graph.name if graph else doc.get("name", ""))[:200])
    transaction.on_commit(lambda: _enqueue(run, planned, options, weights_scope or (
        f"graph-{graph.pk}" if graph else ""), scripts))
    return run


def _enqueue(run: Run, planned: engine.Plan, options: dict[str, Any], weights_scope: str = "",
             scripts: bool = False) -> None:
    """Put a recorded run in the fair queue, with its owner's files (My files) to save in and load from."""
    files = user_files(run.owner_id)
    job = workers.Job(planned, engine.RunOptions(run_id=str(run.id), **options, weights_scope=weights_scope,
                                                 files_dir=str(files.folder), files_max_bytes=files.max_bytes,
                                                 files_max_files=files.max_files,
                                                 scripts=scripts), share=shares.of(run.owner_id))
    _runs.submit(_LiveRun(run, job, _cache.scope(run.owner_id)))
    PRUNER.note(run.owner_id)


def user_files(user_pk: int) -> engine.UserFiles:
    """A student's own files (My files): their folder under CODEFYUI_USER_FILES_DIR, within the quota
    of space and of files."""
    return engine.UserFiles(conf.USER_FILES_DIR / str(int(user_pk)), conf.USER_FILES_MAX_MB * 2**20,
                            conf.USER_FILES_MAX_FILES)


def reset_weights(weights_scope: str) -> int:
    """Reset all weights now: drop every kept layer of a tab; returns how many."""
    return engine.WEIGHTS.reset(weights_scope)


def kept_weights(weights_scope: str) -> int:
    return engine.WEIGHTS.count(weights_scope)


def cancel_run(run: Run) -> Run:
    """Stop a queued or running run. A running node is asked to stop; one that has not
    returned within a moment has its worker ended."""
    if run.is_finished:
        raise RunConflict(f"This run has already {run.status}.")
    if not _runs.cancel(str(run.id)):  # not in this process any more: nothing will finish it
        Run.objects.filter(pk=run.pk, status__in=Run.UNFINISHED).update(
            status=Run.Status.CANCELLED, finished=timezone.now())
    run.refresh_from_db()
    return run


def queue_place(run: Run) -> int | None:
    """A queued run's place in the fair queue (1 = taken next), or None."""
    with _runs.lock:
        live = _runs.live.get(str(run.id))
        return _runs.queue.place(live) if live is not None else None


def current(run: Run) -> Run:
    """The run with what its recorder knows now (the row is written at most every 0.25 s)."""
    live = _runs.live.get(str(run.id))
    if live is not None:
        live.recorder.overlay(run)
    return run


def node_states(run_id) -> dict[str, dict[str, Any]] | None:
    """Each node's status in a run this process runs now or ended lately, without reading
    the database (None for any other run): a run's socket rolls a block's badge up from
    it for every event of a node inside the block. Called on the event loop: it takes only the
    ended runs' brief lock, not the scheduler's (held while a job is sent) nor a recorder's
    (while its row is written); a dict's lookup and copy are each atomic under the GIL."""
    held = _held(run_id)
    return None if held is None else dict(held[0])


def log_length(run_id) -> int | None:
    """How many rows a run's log has, as ``node_states`` knows its nodes (None: not known here)."""
    held = _held(run_id)
    return None if held is None else len(held[1])


def _held(run_id) -> tuple[dict[str, dict[str, Any]], list] | None:
    """The nodes and log of a run this process runs now (its recorder's) or ended lately."""
    key = str(run_id)
    if (live := _runs.live.get(key)) is not None:
        return live.recorder.nodes, live.recorder.log
    with _runs.ended_lock:
        ended = _runs.ended.get(key)
    return (ended.nodes or {}, ended.log or []) if ended is not None else None


def known_run(user, run_id) -> Run | None:
    """A run of the user's as this process knows it, without reading the database: one it
    runs now, or one of the last ENDED_KEPT it ended (whose row it wrote last). None for any
    other run. ``GET /api/runs/{id}?wait=`` answers from here: reading the row back through
    the ORM cost more than the rest of that request."""
    key = str(run_id)
    live = _runs.live.get(key)   # looked up first: an ending run leaves ``live`` before it joins ``ended``
    if live is not None and live.owner_pk == user.pk:
        return live.snapshot()
    return ended_run(user, key)


def ended_run(user, run_id: str) -> Run | None:
    """A run of the user's among the last ENDED_KEPT this process ended (its row as written
    last), else None. The event loop may ask: those runs have a lock of their own, held only to
    look one up or keep one, and a kept run is never changed, only copied."""
    with _runs.ended_lock:
        ended = _runs.ended.get(run_id)
    return copy.copy(ended) if ended is not None and ended.owner_id == user.pk else None


@receiver(post_delete, sender=Run, dispatch_uid="forget-ended-run")
def _forget_ended(sender, instance: Run, **kwargs) -> None:
    """A deleted run (the Runs panel, the API, the admin, its owner's account) is not known here any more."""
    with _runs.ended_lock:
        _runs.ended.pop(str(instance.pk), None)


async def until_finished(run_id: str, seconds: float) -> None:
    """Wait, without holding a thread, until a run of this process ends or ``seconds`` pass."""
    live = _runs.live.get(str(run_id))
    if live is None or seconds <= 0:
        return
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    entry = (loop, future)
    live.waiters.append(entry)
    try:
        if not live.ended.is_set():
            await asyncio.wait([future], timeout=seconds)
    finally:
        live.waiters.remove(entry)


def delete_run(run: Run) -> None:
    """Delete a finished run and drop its captures."""
    if not run.is_finished:
        raise RunConflict("Stop the run before deleting it.")
    get_store().drop_run(str(run.id))
    run.delete()


def wait_for(run_id, timeout: float = 30.0) -> Run:
    """Block until a run has finished (tests and scripts; never in a request)."""
    live = _runs.live.get(str(run_id))
    if live is not None:
        live.ended.wait(timeout)
    return Run.objects.get(pk=run_id)


def worker_usage() -> dict[str, int]:
    """Run workers kept started (spares among them), how many are idle, runs computing and runs queued."""
    with _runs.lock:
        executor = _runs.executor
        pool = executor if isinstance(executor, workers.WorkerPool) else None
        paused = executor.paused()
        return {"workers": len(pool.pids()) if pool else 0, "spares": pool.spares if pool else 0,
                "idle": pool.idle() if pool else executor.free(), "computing": _runs.computing - paused,
                "paused": paused, "queued": len(_runs.queue)}


def cache_usage() -> dict[str, int]:
    """The execution cache's entries, users (scopes) and bytes against its budget."""
    return _cache.usage()


def clear_cache() -> None:
    _cache.clear()
