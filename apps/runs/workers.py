"""Run workers, the server's side: the processes that execute server runs, and their supervisor.

A worker (worker_process.py) is a separate process that runs one run at a time with its own
torch global state. It is forked from a forkserver that has imported torch and the engine
once (worker_start.py), so a new worker costs a fork, not an interpreter importing torch.
What lasts between runs stays in the server (capture store, execution cache, kept weights),
so a replaced worker loses nothing but the run it held. Tensors cross by shared memory,
never as pickled bytes (wire/). Node classes cross by reference (module and name): a
worker imports the module that defines a planned node, so a node module that imports no
Django runs in workers without anything more.

The server end (WorkerPool) supervises: a reader thread per worker takes what it sends; one
watcher thread ends a worker whose run went past its memory cap (the resident memory it
added, read from /proc), its deadline, or the grace period after Stop. A worker that ends
for any reason fails only the run it held, and a fresh one replaces it. InProcessExecutor
runs the same jobs in a thread of this process (unit tests, tools). No Django here.
"""
from __future__ import annotations

import atexit
import logging
import signal
import socket
import threading
import time
from typing import Any, Callable

from . import worker_start
from .engine import timeout_message
from .engine import events as ev
from .engine.executor import recording_stopped
from .engine.storage import RecordingStopped
from .engine.weights import WEIGHTS
from .store import CaptureStore
from .wire import Wire
from .worker_process import NICE, Job, resident_bytes, run_job, worker_main  # noqa: F401  (NICE: the benches')

log = logging.getLogger("codefyui.workers")

WORKER_STOPPED = "The run's worker stopped unexpectedly; run it again"
UNEXPECTED = "The server hit an unexpected problem while running this graph."
STOPPED = "Execution cancelled"
PAUSED = ("Paused: every run worker holds a long run and other students' runs are waiting; this run goes on "
          "once they have run (its time limit keeps counting)")
NO_WORKERS = ("No run worker could start on this server, so no run can run now; an administrator finds why "
              "in the server log.")
GRACE_S = 0.5     # how long a stopped node may take to return before its worker is ended
WATCH_S = 0.05    # how often the watcher reads the busy workers' memory and clocks
LONG_RUN_S = 2.0  # a run held this long lets a spare worker take the next waiting run
STAND_IN_IDLE_S = 120.0  # how long an idle stand-in is kept for the next run that would wait
RESUME_QUIET_S = 1.0     # how long nothing must have waited before a paused run resumes
STAND_IN_RETRY_S = 30.0  # after a stand-in failed to start, how long no run is paused for another


# -- the server's side --------------------------------------------------------------------

class Assignment:
    """One run handed to an executor, and where what it produces goes."""

    def __init__(self, job: Job, emit: Callable[[ev.Event], None], captures: CaptureStore | None,
                 cache, on_end: Callable[["Assignment"], None]):
        self.job, self._emit, self._on_end = job, emit, on_end
        self.captures = captures if job.options.record else None
        self.cache = cache
        self.running: set[str] = set()
        self.settled: set[str] = set()
        self.ended = False           # its terminal event went out
        self.closed = False
        self.deadline = float("inf")
        self.handed_over = float("inf")    # when a worker took it (time.monotonic)
        self.stop_requested: float | None = None
        self.base_rss = 0
        self.device = ""             # what its run_started said
        self.unrecorded = threading.Event()  # the store stopped the run's recording
        self._taking = threading.Lock()      # the worker's messages and the run's end, one at a time
        self.tell_unrecorded: Callable[[], None] = self.unrecorded.set  # a worker's executor tells it instead
        if self.captures is not None:
            self.captures.open_run(job.run_id, job.share)

    @property
    def run_id(self) -> str:
        return self.job.run_id

    def receive(self, kind: str, *payload) -> None:
        """A message from the worker (none once the run has ended: the server ended its worker)."""
        with self._taking:
            if not self.closed:
                self._take(kind, *payload)

    def _take(self, kind: str, *payload) -> None:
        if kind == "events":
            for event in payload[0]:
                self.emit(event)
        elif kind == "captures" and self.captures is not None:
            try:
                self.captures.put_many(self.run_id, payload[0])
            except RecordingStopped as stop:  # the store's budget: said once in the run log
                self.emit(ev.Event(ev.LOG, self.run_id, text=recording_stopped(stop.kept_bytes), level="warning"))
                self.tell_unrecorded()
        elif kind == "refused" and self.captures is not None:
            # the run's recording stopped: put only names the ports
            self.captures.put_many(self.run_id, [(node_id, port, None) for node_id, port in payload[0]])
        elif kind == "cache" and self.cache is not None:
            self.cache.put(*payload)
        elif kind == "weights":
            WEIGHTS.replace(*payload)

    def emit(self, event: ev.Event) -> None:
        if event.kind == ev.RUN_STARTED:
            self.device = (event.data or {}).get("device", "")
        elif event.kind == ev.NODE_RUNNING:
            self.running.add(event.node_id)
        elif event.node_id and event.kind in (ev.NODE_COMPLETED, ev.NODE_CACHED, ev.NODE_ERROR, ev.NODE_SKIPPED):
            self.running.discard(event.node_id)
            self.settled.add(event.node_id)
        elif event.kind in ev.TERMINAL:
            self.ended = True
        self._emit(event)

    def end(self, kind: str = ev.RUN_FAILED, error: str = UNEXPECTED) -> None:
        """The executor is done with the run. If the run did not end by itself (its worker
        was ended or lost), its unfinished nodes and its end are reported here."""
        with self._taking:
            if self.closed:
                return
            self.closed = True
            if not self.ended:
                run_id = self.run_id
                for node_id in self.job.plan.nodes:
                    if node_id in self.settled:
                        continue
                    if node_id in self.running and kind == ev.RUN_FAILED:
                        self.emit(ev.Event(ev.NODE_ERROR, run_id, node_id, error=error, level="error"))
                    else:
                        self.emit(ev.Event(ev.NODE_SKIPPED, run_id, node_id))
                self.emit(ev.Event(kind, run_id, error=error, level="error"))
            if self.captures is not None:
                self.captures.close_run(self.run_id)
        self._on_end(self)

    def memory_message(self, limit_mb: int) -> str:
        nodes = [self.job.plan.nodes[i] for i in self.job.plan.nodes if i in self.running]
        who = ", ".join(f"{n.label} ({n.id})" for n in nodes) or "This run"
        return (f"{who} needed more memory than a run may use ({limit_mb:,} MB, CODEFYUI_RUN_MEMORY_MAX_MB), "
                "so the run was stopped.")


class InProcessExecutor:
    """The same jobs in one thread of this process, one run at a time: for unit tests and
    tools. Nothing ends a node here, so Stop and the deadline act between nodes only."""

    broken = False

    def __init__(self, on_free: Callable[[], None]):
        self._on_free = on_free
        self._busy: tuple[Assignment, threading.Event] | None = None
        self._lock = threading.Lock()

    def free(self) -> int:
        return 0 if self._busy else 1

    def paused(self) -> int:
        return 0

    def run(self, assignment: Assignment) -> bool:
        with self._lock:
            if self._busy:
                return False
            self._busy = (assignment, threading.Event())
            cancel = self._busy[1]
        threading.Thread(target=self._go, args=(assignment, cancel), name="run-in-process", daemon=True).start()
        return True

    def _go(self, assignment: Assignment, cancel: threading.Event) -> None:
        try:
            run_job(assignment.job, cancel, assignment.receive, assignment.unrecorded)
        except Exception:
            log.exception("run %s crashed", assignment.run_id)
        finally:
            with self._lock:
                self._busy = None
            assignment.end()
            self._on_free()

    def cancel(self, run_id: str) -> None:
        with self._lock:
            if self._busy and self._busy[0].run_id == run_id:
                self._busy[1].set()

    def close(self) -> None:
        pass


class _Worker:
    def __init__(self, process, wire: Wire, spare: bool, stand_in: bool = False):
        self.process, self.wire, self.spare, self.stand_in = process, wire, spare, stand_in
        self.paused_since: float | None = None   # when the pool stopped it (SIGSTOP) for a stand-in
        self.ready = False
        self.retiring = False
        self.assignment: Assignment | None = None
        self.idle_rss = 0    # its memory when it last became free: the next run's growth is counted from it
        self.idle_since = time.monotonic()   # when it last became free (or started)
        self.ending: tuple[str, str] | None = None   # (terminal kind, reason) when the server ends it
        self.reader: threading.Thread | None = None  # the thread that takes in what it sends

    def send(self, *message) -> None:
        self.wire.send(message)


def _signal(worker: _Worker, sig: int) -> None:
    try:
        worker.process.send_signal(sig)
    except ProcessLookupError:
        pass   # it ended meanwhile: its reader fails its run


def _resumed(worker: _Worker, now: float) -> tuple:
    """Mark a paused worker's run resumed (under the pool's lock): what its log is told."""
    told = (worker.assignment, f"Resumed after {now - worker.paused_since:.0f} s paused", False)
    worker.paused_since = None
    return told


def _tell_runs(told: list[tuple]) -> None:
    """Each (assignment, text, paused) as a warning in the run's log: its log and status say
    why its progress stands still, or that it goes on."""
    for assignment, text, now_paused in told:
        assignment.emit(ev.Event(ev.LOG, assignment.run_id, text=text, level="warning",
                                 data={"paused": now_paused, "device": assignment.device}))


def _tell(worker: _Worker, *message) -> None:
    try:
        worker.send(*message)
    except OSError:
        pass  # it is ending anyway: its reader fails the run


class WorkerPool:
    """A supervised pool of run worker processes: ``size`` of them take runs as they come,
    and ``spares`` more take one only while every other worker has held its run for
    LONG_RUN_S, so that runs a student made far too long (10,000 epochs where 10 were meant)
    cannot hold the whole class's runs back until their deadline. The cores are then shared
    by more runs for a while; a burst of short runs never reaches the spares.

    When even the spares hold long runs and runs wait (as many students as workers typed 1000
    epochs where 5 were meant), the run held longest is paused (SIGSTOP: it computes nothing,
    keeps its memory, and its deadline runs on) and a stand-in worker takes the queue. Once
    nothing has waited for RESUME_QUIET_S (a class presses Run in bursts: the paused run does
    not stop and start for each of them), paused runs resume while fewer than ``size +
    spares`` compute: runs computing at once stay within that bound, and no worker takes a run
    beyond it. A paused run keeps its memory, so paused runs may hold a quarter of the machine
    at most (``_may_pause``).

    A stand-in is forked in a fraction of a second (worker_start.py), and once it is idle it is
    kept while the lanes stay full: the next run that would wait pauses a long run again and
    goes to it at once, without even that wait, during the minutes those runs last. It exits
    once a lane is free and nothing is paused, or after STAND_IN_IDLE_S idle. One starts only
    while no worker is idle, so there are never more stand-ins than runs that may be paused at
    once. One that ends before it is ready gives its paused run back (``_stand_in_lost``)."""

    def __init__(self, size: int, memory_max_mb: int, threads: int, on_free: Callable[[], None], spares: int = 0,
                 waiting: Callable[[], bool] = lambda: False, start: Callable[..., Any] = worker_start.fork):
        self.size, self.memory_max_mb, self.threads, self._on_free = size, memory_max_mb, threads, on_free
        self.spares = spares
        self._waiting = waiting   # whether runs wait in the scheduler's queue
        self._spares_open = False   # whether the spares may take runs (the watcher tells the scheduler once)
        self._start = start   # how a worker process starts (worker_start.fork; worker_start.spawn the fallback)
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self._closing = False
        self._waited = float("-inf")   # when runs last waited (the watcher's clock)
        self._stand_in_failed = float("-inf")   # when a stand-in last ended before it was ready
        self.replaced = 0   # workers started to replace one that ended
        self.failed_starts = 0  # workers in a row that ended before they were ready

    def start(self) -> "WorkerPool":
        for i in range(self.size + self.spares):
            self._spawn(spare=i >= self.size)
        threading.Thread(target=self._watch, daemon=True, name="run-workers-watch").start()
        atexit.register(self.close)
        return self

    def free(self) -> int:
        """Workers that would take a run now."""
        with self._lock:
            return len(self._takers())

    def idle(self) -> int:
        """Workers started and holding no run, spares included."""
        with self._lock:
            return len(self._idle())

    def paused(self) -> int:
        """Runs paused for a stand-in: they hold a worker but compute nothing."""
        with self._lock:
            return sum(w.paused_since is not None for w in self._workers)

    def _idle(self) -> list[_Worker]:
        return [w for w in self._workers if w.ready and not w.retiring and w.ending is None and w.assignment is None]

    @property
    def _lanes(self) -> int:
        """Runs that may compute at once: the workers and spares the pool keeps."""
        return self.size + self.spares

    def _computing(self) -> list[_Worker]:
        return [w for w in self._workers if w.assignment is not None and w.paused_since is None]

    def _takers(self) -> list[_Worker]:
        """The idle workers that may take a run now, stand-ins after the pool's own and spares
        last; none while ``size + spares`` runs compute (under the lock)."""
        if len(self._computing()) >= self._lanes:
            return []
        idle = sorted(self._idle(), key=lambda w: w.stand_in)
        takers = [w for w in idle if not w.spare]
        if not takers and self._all_held_long():
            takers = [w for w in idle if w.spare]
        return takers

    def _all_held_long(self) -> bool:
        """Every ready worker that is no spare holds a run it took LONG_RUN_S ago (or none is ready)."""
        now = time.monotonic()
        return all(w.assignment is not None and now - w.assignment.handed_over >= LONG_RUN_S
                   for w in self._workers if not w.spare and w.ready and w.ending is None)

    @property
    def broken(self) -> bool:
        """Every worker failed to start and none is ready: queued runs would wait forever."""
        with self._lock:
            return self.failed_starts >= self.size + self.spares and not any(w.ready for w in self._workers)

    def pids(self) -> list[int]:
        with self._lock:
            return [pid for pid in (w.process.pid for w in self._workers) if pid is not None]

    def run(self, assignment: Assignment) -> bool:
        """Hand the run to an idle worker; False when none is idle."""
        with self._lock:
            worker = next(iter(self._takers()), None)
            if worker is None:
                return False
            worker.assignment = assignment
            assignment.handed_over = time.monotonic()
            assignment.tell_unrecorded = lambda: _tell(worker, "unrecorded", assignment.run_id)
            assignment.base_rss = worker.idle_rss   # read when it became free: not on a run's way in
            assignment.deadline = time.monotonic() + assignment.job.options.timeout_s + 1.0
        try:
            worker.send("run", assignment.job)
        except OSError:
            pass  # the worker is ending: its reader fails the run
        except Exception:  # the job could not be pickled: nothing was written, the worker stays
            log.exception("could not hand run %s to a worker", assignment.run_id)
            with self._lock:
                worker.assignment = None
            assignment.end()
            self._on_free()
        return True

    def cancel(self, run_id: str) -> None:
        with self._lock:
            worker = next((w for w in self._workers if w.assignment and w.assignment.run_id == run_id), None)
            if worker is None:
                return
            worker.assignment.stop_requested = time.monotonic()
        _tell(worker, "cancel", run_id)

    def close(self) -> None:
        self._closing = True
        with self._lock:
            workers = list(self._workers)
        for worker in workers:
            if worker.process.is_alive():
                _signal(worker, signal.SIGKILL)
        for worker in workers:
            worker.process.join(5)
            worker.reader.join(5)  # it has seen the end of its worker's socket

    def _received(self, worker: _Worker, message: tuple) -> None:
        """One message from a worker (a batch's, in turn)."""
        kind = message[0]
        if kind == "ready":
            worker.idle_rss, worker.idle_since = message[3], time.monotonic()
            worker.ready = True
            self.failed_starts = 0
            self._on_free()
        elif kind == "done":
            worker.idle_rss, worker.idle_since = message[3], time.monotonic()
            with self._lock:
                assignment, worker.assignment = worker.assignment, None
                worker.retiring = message[2]
                paused, worker.paused_since = worker.paused_since is not None, None
            if paused:   # its run ended just as it was paused: a free worker computes nothing anyway
                _signal(worker, signal.SIGCONT)
            if assignment is not None:
                assignment.end()
            if worker.retiring:
                _tell(worker, "exit")
            else:
                self._on_free()
        elif (assignment := worker.assignment) is not None:   # the watcher may end it meanwhile (_end)
            try:
                assignment.receive(*message)
            except Exception:
                log.exception("run %s: could not take in a %s message", assignment.run_id, kind)

    def _spawn(self, spare: bool, stand_in: bool = False) -> None:
        ours, theirs = socket.socketpair()
        process = self._start(worker_main, theirs, self.threads, stand_in=stand_in)
        theirs.close()     # the server keeps only its own end, so it sees EOF when a worker ends
        worker = _Worker(process, Wire(ours), spare, stand_in)
        with self._lock:
            self._workers.append(worker)
            closing = self._closing
        if closing:  # close() ran while this replacement started, and did not see it
            _signal(worker, signal.SIGKILL)
        worker.reader = threading.Thread(target=self._serve, args=(worker,), daemon=True, name="run-worker")
        worker.reader.start()

    def _serve(self, worker: _Worker) -> None:
        """Everything one worker sends, until it ends; then fail what it held and replace it."""
        while True:
            try:
                message = worker.wire.recv()
            except (EOFError, OSError):
                break
            except Exception:  # e.g. a capture whose shared memory went with its ended worker
                log.warning("lost a message from run worker %s", worker.process.pid, exc_info=True)
                continue
            for each in message[1] if message[0] == "batch" else [message]:
                self._received(worker, each)
        worker.process.join(5)
        worker.wire.close()
        with self._lock:
            assignment, worker.assignment = worker.assignment, None
            self._workers.remove(worker)
        if assignment is not None:
            assignment.end(*(worker.ending or (ev.RUN_FAILED, WORKER_STOPPED)))
        if worker.stand_in and not worker.ready and not self._closing:
            log.error("a stand-in run worker exited during start-up with code %s", worker.process.exitcode)
            self._stand_in_lost(time.monotonic())
        if self._closing or worker.stand_in:   # a stand-in was one more than the pool keeps
            return
        if not worker.ready:  # it never started (a broken install?): do not spin
            log.error("a run worker exited during start-up with code %s", worker.process.exitcode)
            self.failed_starts += 1
            self._on_free()  # once every worker failed, the scheduler fails what waits (it keeps trying)
            time.sleep(2)
        self.replaced += 1
        self._spawn(worker.spare)

    def _relieve(self, now: float) -> None:
        """Pause the longest-held of the long runs for a stand-in while runs wait and every
        computing worker holds a long one; once nothing waits, resume paused runs and retire
        the stand-ins no longer needed (see the class docstring)."""
        waiting = self._waiting()
        with self._lock:
            live = [w for w in self._workers if not w.retiring and w.ending is None]
            paused = [w for w in live if w.paused_since is not None]
            computing = [w for w in live if w.assignment is not None and w.paused_since is None]
            idle = [w for w in live if w.ready and w.assignment is None]
            pause = resume = None
            retire, told, spawn = [], [], False
            if waiting:
                self._waited = now
                may_start = (not any(w.stand_in and not w.ready for w in live)
                             and now - self._stand_in_failed >= STAND_IN_RETRY_S)
                held_long = all(now - w.assignment.handed_over >= LONG_RUN_S for w in computing)
                longest = min(computing, key=lambda w: w.assignment.handed_over, default=None)
                if (longest is not None and held_long and (idle or may_start) and not self._takers()
                        and self._may_pause(paused, longest, starts_one=not idle)):
                    pause = longest
                    pause.paused_since = now
                    told.append((pause.assignment, PAUSED, True))
                    spawn = not idle   # else an idle worker (a stand-in kept) takes the run the pause makes room for
            else:
                if paused and len(computing) < self._lanes and now - self._waited >= RESUME_QUIET_S:
                    resume = min(paused, key=lambda w: w.paused_since)
                    told.append(_resumed(resume, now))
                lane_free = not paused and len(computing) < self._lanes
                retire = [w for w in idle if w.stand_in and (lane_free or now - w.idle_since >= STAND_IN_IDLE_S)]
                for worker in retire:
                    worker.retiring = True
        for worker in retire:
            _tell(worker, "exit")
        for worker, sig in ((pause, signal.SIGSTOP), (resume, signal.SIGCONT)):
            if worker is not None:
                _signal(worker, sig)
        _tell_runs(told)
        if spawn:
            self._spawn(spare=False, stand_in=True)
        elif pause is not None:
            self._on_free()   # the scheduler hands the waiting run to the idle worker

    def _stand_in_lost(self, now: float) -> None:
        """A stand-in ended before it was ready (the machine out of memory?): the run paused
        last, for it, resumes, and for STAND_IN_RETRY_S no run is paused for another stand-in,
        so that runs are not paused one after another for stand-ins that never come."""
        with self._lock:
            self._stand_in_failed = now
            paused = [w for w in self._workers if w.paused_since is not None and w.ending is None]
            resume = max(paused, key=lambda w: w.paused_since, default=None)
            told = [_resumed(resume, now)] if resume is not None else []
        if resume is not None:
            _signal(resume, signal.SIGCONT)
        _tell_runs(told)

    def _may_pause(self, paused: list[_Worker], candidate: _Worker, starts_one: bool) -> bool:
        """Whether one more run may be paused (under the lock). Paused runs keep their memory:
        together with the stand-in a pause may start, they may hold half of what the lanes'
        runs may grow to (the memory cap's default shares half the machine among them, so
        this is a quarter of it), and at most as many as there are lanes. Without a memory
        cap, half the lanes."""
        if not self.memory_max_mb:
            return len(paused) < max(1, self._lanes // 2)
        if len(paused) >= self._lanes:
            return False
        held = sum(resident_bytes(w.process.pid) for w in [*paused, candidate])
        if starts_one:   # a stand-in costs what a worker holds idle
            held += max((w.idle_rss for w in self._workers), default=0)
        return held <= self.memory_max_mb * 2**20 * self._lanes // 2

    def _end(self, worker: _Worker, kind: str, reason: str) -> None:
        """End a worker now, and its run with this reason: the run reads stopped (or failed) at
        once, not when the worker's socket closes, after the kernel has taken back its memory
        (with four runaways at the element limit on 2 cores, Stop then took 1.15 s median and
        up to 3 s: bench/worker_start.py). What the worker still sends is dropped; its reader
        replaces it once it has ended. The run's end is told from a thread of its own, as a
        reader tells it: the watcher waits for no listener."""
        with self._lock:
            if worker.ending is not None:
                return
            worker.ending = (kind, reason)
            assignment, worker.assignment, worker.paused_since = worker.assignment, None, None
        _signal(worker, signal.SIGKILL)
        if assignment is not None:
            threading.Thread(target=assignment.end, args=(kind, reason), daemon=True, name="run-end").start()

    def _watch(self) -> None:
        while not self._closing:
            time.sleep(WATCH_S)
            now, limit = time.monotonic(), self.memory_max_mb * 2**20
            with self._lock:
                busy = [(w, w.assignment) for w in self._workers if w.assignment is not None and w.ending is None]
                spares_open = any(w.spare for w in self._takers())
                opened, self._spares_open = spares_open and not self._spares_open, spares_open
            if opened:   # the others have now held their runs long: a waiting run may go to a spare
                self._on_free()
            try:
                self._relieve(now)
            except Exception:   # the watcher goes on: it also ends runs past their deadline or memory
                log.exception("could not pause or resume a run for a stand-in")
            for worker, assignment in busy:
                if assignment.stop_requested is not None and now - assignment.stop_requested > GRACE_S:
                    self._end(worker, ev.RUN_STOPPED, STOPPED)
                elif now > assignment.deadline:
                    self._end(worker, ev.RUN_FAILED, timeout_message(assignment.job.options.timeout_s))
                elif limit and resident_bytes(worker.process.pid) - assignment.base_rss > limit:
                    self._end(worker, ev.RUN_FAILED, assignment.memory_message(self.memory_max_mb))
