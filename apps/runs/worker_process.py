"""Inside a run worker: the process that executes server runs, one at a time (workers.py
is the server's side of it, worker_start.py how it starts).

A worker is a pure executor: a Job goes in (the plan, the run options, the cached outputs the
server found for it, the tab's kept layers); events, captures, new cache entries and the
layers the run ended with come out, in that order, over one Unix socket (wire/). It has
its own torch global state (seed, deterministic flag, thread count), so a seeded or
deterministic run changes nothing for anyone else. No Django here.
"""
from __future__ import annotations

import ctypes
import gc
import logging
import os
import signal
import socket
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from codefyui import conf

from .engine import RunOptions, execute, warm_up
from .engine import events as ev
from .engine.executor import THREADS
from .engine.plan import Plan
from .engine.weights import WEIGHTS
from .sandbox import run_script
from .store import CaptureStore, Share, freeze
from .wire import Wire

log = logging.getLogger("codefyui.workers")

PAGE = os.sysconf("SC_PAGE_SIZE")
NICE = 10         # the workers' CPU priority below the server's


@dataclass
class Job:
    plan: Plan
    options: RunOptions
    hits: dict[str, tuple[dict[str, Any], list[str]]] = field(default_factory=dict)  # cache key -> hit
    weights: list = field(default_factory=list)   # the tab's kept layers: [((scope, node, structure), module)]
    share: Share | None = None                    # the owner's class's share of the capture store

    @property
    def run_id(self) -> str:
        return self.options.run_id


Send = Callable[..., None]


class _JobCache:
    """The execution cache as a run sees it: the hits the server found, and new entries sent back."""

    def __init__(self, hits: dict, send: Send):
        self._hits, self._send = hits, send

    def get(self, key: str):
        return self._hits.get(key)

    def put(self, key: str, outputs: dict[str, Any], logs: list[str]) -> None:
        self._send("cache", key, outputs, list(logs))


class _CaptureSink(CaptureStore):
    """The capture store as a run sees it: each capture is frozen here and sent to the server's.
    Once the server's store has stopped the run's recording (``unrecorded`` is set), only the
    port's name goes, so the store still names it refused and nothing is copied for nothing."""

    def __init__(self, send: Send, unrecorded: threading.Event):
        self._send, self._unrecorded = send, unrecorded

    def open_run(self, run_id: str, share: Share | None = None) -> None:
        pass

    def close_run(self, run_id: str) -> None:
        pass

    def put(self, run_id: str, node_id: str, port: str, value: Any) -> None:
        self.put_many(run_id, [(node_id, port, value)])

    def put_many(self, run_id: str, items: list[tuple[str, str, Any]]) -> None:
        if self._unrecorded.is_set():
            self._send("refused", [(node_id, port) for node_id, port, _ in items])
        else:
            self._send("captures", [(node_id, port, freeze(value)) for node_id, port, value in items])

    def get(self, run_id, node_id, port):
        return None

    def has_run(self, run_id):
        return False

    def ports(self, run_id):
        return None

    def drop_run(self, run_id):
        return False

    def usage(self):
        return {}


class _Outbox:
    """What a run sends leaves its worker in batches: events, captures and cache entries, in
    the order they were made, as one message at most LINGER_S late (progress stays live).
    What waits at the run's end, its terminal event among it, goes with the worker's "done"
    (``close``). Each message costs both ends system calls, a wake-up and an unpickling, and
    a small run makes a few dozen in milliseconds. The batches of every outbox of the process
    are sent when due by one thread (_LINGER): starting a thread per run cost a run a wake-up
    before its first node."""

    LINGER_S = 0.01

    def __init__(self, send: Send, run_id: str):
        self._send, self._run_id = send, run_id
        self._messages: list[tuple] = []
        self._due: float | None = None     # when the waiting messages must go
        self._lock = threading.Lock()      # over the waiting messages: a post never waits for a send
        self._sending = threading.Lock()   # held while a batch goes: two never overtake each other

    def post(self, *message) -> None:
        terminal = message[0] == "events" and message[1][-1].kind in ev.TERMINAL
        with self._lock:
            self._messages.append(message)
            if not terminal:   # the run's end goes at its close, right after
                due = time.monotonic() + self.LINGER_S
                if self._due is None or due < self._due:
                    self._due = due
                    _LINGER.schedule(self, due)

    def close(self, last: tuple | None = None) -> None:
        """Send what waits, now, and ``last`` (the worker's "done") in the same batch: one
        message a run fewer for the server's reader."""
        self._flush(due_only=False, last=last)

    def flush_due(self) -> None:
        self._flush(due_only=True)

    def _flush(self, due_only: bool, last: tuple | None = None) -> None:
        with self._sending:
            with self._lock:
                if due_only and (self._due is None or self._due > time.monotonic()):
                    return
                messages, self._messages, self._due = self._messages, [], None
            if last is not None:
                messages.append(last)
            if not messages:
                return
            try:
                self._send("batch", _without_unseen_starts(messages))
            except Exception:  # something in it cannot cross (cannot be pickled): each on its own
                for message in messages:
                    self._send_alone(message)

    def _send_alone(self, message: tuple) -> None:
        try:
            self._send(*message)
        except Exception as exc:
            if message[0] == "captures" and len(message[1]) > 1:  # to name the one that cannot
                for item in message[1]:
                    self._send_alone(("captures", [item]))
            elif message[0] == "captures":
                node_id, port, _ = message[1][0]
                self._send("events", [ev.Event(ev.LOG, self._run_id, node_id, level="warning",
                                               text=f"The output '{port}' could not be recorded "
                                                    f"({type(exc).__name__})")])
            else:  # an execution-cache entry that cannot cross is simply not cached
                log.debug("a %s message could not be sent", message[0], exc_info=True)


_NODE_ENDS = frozenset({ev.NODE_COMPLETED, ev.NODE_CACHED, ev.NODE_ERROR, ev.NODE_SKIPPED})


def _without_unseen_starts(messages: list[tuple]) -> list[tuple]:
    """The batch without the "running" events of nodes that also end in it: the server takes
    a batch in at once, so no one could see those nodes running, and each event costs its
    reader (unpickling, the run's record, its listeners). A node's events keep their order;
    a start whose end comes in a later batch stays."""
    ends_later: set[str] = set()
    kept: list[tuple] = []
    for message in reversed(messages):
        if message[0] == "events":
            events = []
            for event in reversed(message[1]):
                if event.kind == ev.NODE_RUNNING and event.node_id in ends_later:
                    ends_later.discard(event.node_id)
                    continue
                if event.kind in _NODE_ENDS:
                    ends_later.add(event.node_id)
                events.append(event)
            if not events:
                continue
            if len(events) < len(message[1]):
                message = ("events", events[::-1])
        kept.append(message)
    return kept[::-1]


class _Lingerer:
    """The thread that sends each outbox's batch when it is due (started on first use)."""

    def __init__(self) -> None:
        self._due: dict[_Outbox, float] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def schedule(self, outbox: _Outbox, due: float) -> None:
        with self._wake:
            self._due[outbox] = due
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="worker-outbox")
                self._thread.start()
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while True:
                    now = time.monotonic()
                    ready = [outbox for outbox, due in self._due.items() if due <= now]
                    if ready:
                        break
                    self._wake.wait(min(self._due.values(), default=now + 60) - now)
                for outbox in ready:
                    del self._due[outbox]
            for outbox in ready:   # outside the condition: an outbox's lock is taken before it in post
                outbox.flush_due()


_LINGER = _Lingerer()


def run_job(job: Job, cancel: threading.Event, send: Send, unrecorded: threading.Event | None = None,
            outbox: _Outbox | None = None, scripts: Callable | None = None) -> None:
    """Execute one job, sending everything it produces (``unrecorded``: the server's store
    stopped recording the run; ``outbox``: in its batches, as a worker does, which closes it
    after; ``scripts`` runs script nodes: a worker's sandbox, without which they refuse to run).
    The kept layers of Persist weights go last, straight away (before the outbox's last batch)."""
    opts = job.options
    scope = opts.weights_scope if opts.persist_weights else ""
    if scope:
        WEIGHTS.replace(scope, job.weights)
    post = outbox.post if outbox else send
    try:
        execute(job.plan, opts, lambda event: post("events", [event]),
                captures=_CaptureSink(post, unrecorded or threading.Event()) if opts.record else None,
                cancel=cancel, cache=_JobCache(job.hits, post), scripts=scripts, summaries_later=outbox is not None)
    finally:
        if scope:
            send("weights", scope, WEIGHTS.entries(scope))


def _keep_freed_memory() -> None:
    """Let glibc keep what a run frees for the next run instead of handing it back at once.

    By default the engine threads' malloc arenas give freed memory above a few MB back to the
    kernel, and large tensors are mmapped and unmapped each time, so every run faulted its
    tensors' pages in afresh (a fault and zeroing per 4 KB page: ~1 GB/s on this kind of
    machine, thousands of faults per run of a small MLP). Allocations under
    ``MMAP_THRESHOLD`` now come from the arenas, and an arena keeps up to ``TRIM_THRESHOLD``
    free at its top. The memory watcher counts growth within a run, so what was kept from an
    earlier run is not counted against the next."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:   # not glibc: its own defaults
        return
    libc.mallopt(_M_MMAP_THRESHOLD, 16 * 2**20)
    libc.mallopt(_M_TRIM_THRESHOLD, 64 * 2**20)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3   # glibc's mallopt parameters


def resident_bytes(pid: int | str = "self") -> int:
    """A process's resident memory (0 once it is gone). A worker tells its own when it becomes
    free ("ready", "done"), so the server's busiest moments read no file for it."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _lower_priority() -> None:
    """Every thread of this process at NICE (each thread has its own; threads started later
    take their starter's)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), NICE)
        except OSError:   # a thread that ended meanwhile
            pass


def worker_main(sock: socket.socket, threads: int) -> None:
    """A worker process: take jobs one at a time until the server goes away.

    Two threads serve in turns: one reads the socket (a run's Stop, the server's hand-backs)
    while the other runs the job it read. The reader of a "run" message runs that job itself
    and the other takes over reading, so a job starts without a thread wake-up on its way."""
    # Ctrl+C in the server's terminal reaches every process of its group: a worker leaves its
    # ending to the server (it exits once the server is gone), without a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(threads)
    _keep_freed_memory()
    # A run's outputs go as captures and as cache entries: one copy, into the worker's arena.
    wire = Wire(sock, keep_copies=True, arena_bytes=conf.RUN_WORKER_ARENA_MB * 2**20)
    lock = threading.Lock()
    current: dict[str, Any] = {"run_id": None, "cancel": None, "unrecorded": None}
    reading = threading.Lock()   # held by the thread that reads the socket

    def send(*message) -> None:
        wire.send(message)

    def next_job() -> tuple[Job, threading.Event, threading.Event]:
        while True:
            try:
                message = wire.recv()
            except (EOFError, OSError):
                os._exit(0)  # the server is gone: nothing is left to run for
            if message[0] == "run":
                with lock:
                    current.update(run_id=message[1].run_id, cancel=threading.Event(), unrecorded=threading.Event())
                    return message[1], current["cancel"], current["unrecorded"]
            elif message[0] in ("cancel", "unrecorded"):
                with lock:
                    if current["run_id"] == message[1]:
                        current[message[0]].set()
            elif message[0] == "release":   # the server let go of these slices of the arena
                wire.handed_back(message[1])
            elif message[0] == "exit":
                os._exit(0)

    def serve() -> None:
        while True:
            with reading:
                job, cancel, unrecorded = next_job()
            outbox = _Outbox(send, job.run_id)
            try:
                run_job(job, cancel, send, unrecorded, outbox, scripts=run_script)  # scripts: in a child of their own
            except Exception:
                traceback.print_exc()
            retire = THREADS.still_computing()
            with lock:
                current.update(run_id=None, cancel=None, unrecorded=None)
            outbox.close(last=("done", job.run_id, retire, resident_bytes()))
            wire.forget()   # what the run sent is the server's now
            if retire:  # the server answers "exit" once it has read everything before "done"
                time.sleep(30)
                os._exit(0)

    warm_up()  # what the element limit's first meta run loads (a forked worker: the forkserver did)
    # What start-up built (torch, the node library: ~290,000 objects) goes beyond the cyclic
    # collector, as in the server (codefyui/asgi.py): a full collection walked all of it, about
    # 150 ms on a 2-core VM, in the middle of whichever run's allocation set it off. (A forked
    # worker's is frozen already: the forkserver froze it before forking.)
    gc.collect()
    gc.freeze()
    _lower_priority()   # it started at the server's priority (worker_start.fork)
    try:
        send("ready", os.getpid(), wire.offer(), resident_bytes())   # the server maps the arena once
    except OSError:   # the server ended while this worker started (Ctrl+C in its first seconds)
        os._exit(0)
    threading.Thread(target=serve, daemon=True, name="worker-serve").start()
    serve()
