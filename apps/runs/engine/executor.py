"""Run a planned graph: nodes in dependency order, independent ones side by side.

``execute`` is the only entry point. It takes a Plan, RunOptions, an event sink (called
from engine threads, so it must be thread-safe), an optional capture store, a cancel flag
and an optional execution cache, and returns a RunOutcome. It never raises for a node's
failure: the outcome and the events say what happened. No Django here.

A server run executes in a run worker process of its own (apps/runs/workers.py), so the
torch global state a seeded or deterministic run sets (seeds, the deterministic flag)
belongs to that run alone.
"""
from __future__ import annotations

import functools
import heapq
import logging
import random
import threading
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np
import torch

from apps.graphs.nodes.base import NodeError, ParamError
from apps.graphs.nodes.library._helpers import manual_seed
from codefyui import conf

from . import events as ev
from .cache import CacheScope, ExecutionCache, cache_key
from .gradients import RUN, TARGET, GradientCapture, pick_target, target_capture
from .limits import element_limit
from .node_context import Emit, NodeContext, RunScript, node_seed
from .storage import RecordingStopped
from .plan import Plan, PlannedNode

log = logging.getLogger("codefyui.engine")

@dataclass
class RunOptions:
    run_id: str
    record: bool = True              # Record node outputs
    verbose: bool = False            # Verbose internals: __steps__ traces, no cache
    gradients: bool = False          # Capture gradients: a backward pass after the forward one, no cache
    auto_loss: bool = False          # Auto-synthesize loss (only with gradients): the backward target when none is given
    seed: int | None = None          # Random seed: each node seeded from (seed, node id)
    deterministic: bool = False      # torch.use_deterministic_algorithms(True, warn_only=True)
    device: str = "cpu"
    persist_weights: bool = False    # keep layers between runs of the same tab (weights_scope)
    weights_scope: str = ""
    max_parallel: int = field(default_factory=lambda: conf.MAX_PARALLEL_NODES)
    max_elements: int = field(default_factory=lambda: conf.MAX_TENSOR_ELEMENTS)
    timeout_s: float = field(default_factory=lambda: conf.RUN_TIMEOUT_S)
    files_dir: str = ""              # the run owner's own files (My files); "" = none (the CLI without --files)
    files_max_bytes: int = 0
    files_max_files: int = field(default_factory=lambda: conf.USER_FILES_MAX_FILES)
    scripts: bool = False            # script nodes are on on this server (an administrator's choice)

    @property
    def one_node_at_a_time(self) -> bool:
        """A seeded or deterministic run executes its nodes in order, as the seed says."""
        return self.seed is not None or self.deterministic


@dataclass
class NodeResult:
    status: str                      # completed | cached | error | skipped
    error: str | None = None
    summary: dict[str, Any] | None = None
    seconds: float = 0.0


@dataclass
class RunOutcome:
    run_id: str
    status: str                      # succeeded | failed | cancelled
    device: str
    error: str | None = None
    nodes: dict[str, NodeResult] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)  # node -> port -> value


# -- devices ------------------------------------------------------------------------------

@functools.cache
def available_devices() -> tuple[str, ...]:
    """The devices of this machine, asked once (a run's dispatch asks, and torch's asking
    cost ~30 µs on the server's one interpreter each time)."""
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices += ["cuda"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        devices.append("mps")
    return tuple(devices)


def resolve_device(requested: str | None) -> tuple[torch.device, str | None]:
    """The device a run will use, and a warning when it is not the one asked for."""
    name = (requested or "cpu").strip().lower()
    if name == "auto":
        return torch.device(next(d for d in ("cuda", "mps", "cpu") if d in available_devices())), None
    if name in available_devices():
        return torch.device(name), None
    backend = name.split(":")[0]
    if backend in ("cuda", "mps"):
        return torch.device("cpu"), f"No {backend} on this server. Runs fall back to CPU."
    return torch.device("cpu"), f"Unknown device '{requested[:40]}'. Runs fall back to CPU."


# -- engine threads -----------------------------------------------------------------------

class _Threads:
    """The threads nodes run in, kept from one run to the next. A fresh thread's torch is
    markedly slower for its first ops (its allocator arena and kernels' scratch start cold:
    about +50% on a small MLP's forward and backward, bench/gradients.py), so a run takes
    an idle pool a finished run gave back, or makes one. A pool whose run ended with a node
    still computing (it ignored Stop or the deadline) is never reused: it is shut down, and
    ``still_computing`` reports it until that node returns."""

    def __init__(self) -> None:
        self._idle: dict[int, list[ThreadPoolExecutor]] = {}
        self._abandoned: list[Future] = []
        self._lock = threading.Lock()

    def take(self, size: int) -> ThreadPoolExecutor:
        with self._lock:
            idle = self._idle.get(size)
            if idle:
                return idle.pop()
        return ThreadPoolExecutor(size, thread_name_prefix="engine")

    def give_back(self, size: int, pool: ThreadPoolExecutor, running: list[Future]) -> None:
        if any(not f.done() for f in running):
            pool.shutdown(wait=False, cancel_futures=True)
            with self._lock:
                self._abandoned = [f for f in self._abandoned if not f.done()] + list(running)
            return
        with self._lock:
            idle = self._idle.setdefault(size, [])
            if len(idle) < 4:   # runs of one process at once: a few pools of each size are plenty
                idle.append(pool)
                return
        pool.shutdown(wait=False)

    def still_computing(self, wait_s: float = 0.2) -> bool:
        """A node that ignored a stop or the deadline still holds an engine thread."""
        with self._lock:
            pending = [f for f in self._abandoned if not f.done()]
        if pending:
            wait(pending, timeout=wait_s)
        with self._lock:
            self._abandoned = [f for f in self._abandoned if not f.done()]
            return bool(self._abandoned)


THREADS = _Threads()


# -- the run ------------------------------------------------------------------------------

def execute(plan: Plan, options: RunOptions, emit: Emit, captures: Any = None,
            cancel: threading.Event | None = None,
            cache: ExecutionCache | CacheScope | None = None, scripts: RunScript | None = None,
            summaries_later: bool = False) -> RunOutcome:
    """``scripts`` runs script nodes' code: a run worker passes ``sandbox.run_script``.
    ``summaries_later``: events and results carry ``events.Summaries``, worked out when first
    read, not plain dicts (a run worker passes True: its outbox thread pickles the events)."""
    cancel = cancel or threading.Event()
    emit = _naming(plan, emit)
    device, warning = resolve_device(options.device)
    outcome = RunOutcome(options.run_id, "succeeded", str(device))
    record = captures if options.record else None
    if record is not None:
        record.open_run(options.run_id)
    try:
        emit(ev.Event(ev.RUN_STARTED, options.run_id, data={"device": str(device)}))
        for text in ([warning] if warning else []) + plan.warnings:
            _log(emit, outcome, options.run_id, None, text, "warning")
        if cancel.is_set():
            return _finish(plan, outcome, emit, ev.RUN_STOPPED, "Execution cancelled")
        with _run_flags(options):
            return _Runner(plan, options, device, emit, record, cancel, cache, outcome, scripts,
                           summaries_later).run()
    finally:
        if record is not None:
            record.close_run(options.run_id)


def timeout_message(seconds: float) -> str:
    return f"The run took longer than {seconds:g} seconds (CODEFYUI_RUN_TIMEOUT_S) and was stopped."


_KEYS_KEPT = 8   # (seed, device) pairs whose keys a plan remembers


def cache_keys(plan: Plan, options: RunOptions, device: str) -> dict[str, str]:
    """The execution-cache key of every node that may be served from the cache (read only).
    Keys never depend on outputs, so a server can look up a run's hits before the run starts,
    and they are worked out once per plan, seed and device: the server's lookup and the
    worker's run of a class's shared plan take them from ``Plan.cache_keys``."""
    if options.verbose or options.gradients:
        return {}
    memo = (options.seed, device)
    keys = plan.cache_keys.get(memo)
    if keys is None:
        keys = _cache_keys(plan, options.seed, device)
        kept = plan.cache_keys if len(plan.cache_keys) < _KEYS_KEPT else {}
        plan.cache_keys = {**kept, memo: keys}   # never changed in place: another thread may be pickling the plan
    return keys


def _cache_keys(plan: Plan, seed: int | None, device: str) -> dict[str, str]:
    seeded = seed is not None
    keys: dict[str, str] = {}
    for node in plan.nodes.values():  # in execution order: upstream keys come first
        cls = node.cls
        if not cls.cacheable or cls.stateful or (cls.draws_random(node.params) and not seeded):
            continue
        if any(src not in keys for src, _ in node.inputs.values()):
            continue  # something upstream is not cacheable, so neither is this
        keys[node.id] = cache_key(node.type, node.params, device, node_seed(seed, node.id) if seeded else None,
                                  node.inputs, keys)
    return keys


@contextmanager
def _run_flags(options: RunOptions) -> Iterator[None]:
    if not options.deterministic:
        yield
        return
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before)


class _Runner:
    def __init__(self, plan, options, device, emit, captures, cancel, cache, outcome, scripts=None,
                 summaries_later=False):
        self.plan, self.options, self.device, self.emit, self.scripts = plan, options, device, emit, scripts
        self.summaries = ev.Summaries if summaries_later else _summaries
        self.captures, self.cancel, self.outcome = captures, cancel, outcome
        self.cache = None if options.verbose or options.gradients else cache
        self.gradients = GradientCapture() if options.gradients else None
        self.results: dict[str, dict[str, Any]] = {}
        self.keys = cache_keys(plan, options, str(device)) if self.cache is not None else {}
        self.waiting = {i: set(n.after) for i, n in plan.nodes.items()}
        self.dependents: dict[str, list[str]] = {}
        for i, node in plan.nodes.items():
            for dep in node.after:
                self.dependents.setdefault(dep, []).append(i)
        self.order = {i: k for k, i in enumerate(plan.nodes)}
        self.ready = [(self.order[i], i) for i, deps in self.waiting.items() if not deps]  # a heap, in plan order
        self.deadline = float("inf")
        self.stopped_inside = False   # a node ended early because it saw the Stop
        self.lock = threading.Lock()  # the run's records, taken by one chain at a time
        self.quiet = threading.Condition(self.lock)   # a chain ended
        self.chains = 0               # engine threads running this run's nodes now
        self.futures: list[Future] = []
        self.failure: str | None = None
        self.crash: BaseException | None = None
        self.over = False             # the run is ending: nothing more is started or recorded
        self.width = 1
        self.pool: ThreadPoolExecutor | None = None

    def run(self) -> RunOutcome:
        """Nodes run in chains: a chain is one engine thread that runs a node, records it, and
        goes straight on to the next ready node, so a graph's usual straight line costs no
        hand-off between threads per node (two thread wake-ups each, ~0.2 ms here: more than
        a small node's own work). Independent nodes start further chains, up to the width.
        The last chain to finish ends the run (the backward pass of Capture gradients, the
        terminal event); this thread only waits for that, the deadline, or a chain's crash."""
        opts = self.options
        size = max(1, opts.max_parallel)
        self.width = 1 if opts.one_node_at_a_time else size   # chains at once
        self.deadline = deadline = time.monotonic() + opts.timeout_s
        self.pool = THREADS.take(size)
        try:
            with self.lock:
                self._start_chains()
                if not self.chains:   # nothing left to run: every node from the cache, or stopped
                    self._end()
                while not self.over and self.crash is None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        self.over = True   # a chain still computing records nothing more
                        return self._finish(ev.RUN_FAILED, timeout_message(opts.timeout_s))
                    self.quiet.wait(min(left, 1.0))
                self.over = True
                if self.crash is not None:
                    raise self.crash
            return self.outcome
        finally:
            THREADS.give_back(size, self.pool, list(self.futures) if self.chains else [])

    def _start_chains(self) -> None:
        """Under the lock: a chain for each ready node, while the width allows."""
        while self.chains < self.width:
            node = self._next()
            if node is None:
                return
            self.chains += 1
            self.futures.append(self.pool.submit(self._chain, node))

    def _next(self) -> PlannedNode | None:
        """Under the lock: the next node to run (announced running), serving what the
        execution cache has on the way; None when the run must start nothing more."""
        while not self.over and self.failure is None and not self.cancel.is_set() and self.ready:
            node = self.plan.nodes[heapq.heappop(self.ready)[1]]
            if not self._serve_from_cache(node):
                self.emit(ev.Event(ev.NODE_RUNNING, self.options.run_id, node.id))
                return node
        return None

    def _chain(self, node: PlannedNode | None) -> None:
        try:
            while node is not None:
                result = self._run_node(node)
                with self.lock:
                    if self.over:   # the run ended without this node (its deadline)
                        return
                    self.failure = self.failure or self._collect(node, result)
                    node = self._next()
                    self._start_chains()
        except BaseException as exc:  # a bug in recording a node: the run reports it, not a hang
            with self.lock:
                self.crash = self.crash or exc
        finally:
            with self.lock:
                self.chains -= 1
                if not self.chains:
                    self._end()

    def _end(self) -> None:
        """Under the lock, once no chain runs: end the run, unless it has ended already."""
        if self.over:
            return
        self.over = True
        try:
            if self.crash is not None:
                return
            if self.failure:
                self._finish(ev.RUN_FAILED, self.failure)
            elif self.cancel.is_set() and (len(self.results) < len(self.plan.nodes) or self.stopped_inside):
                self._finish(ev.RUN_STOPPED, "Execution cancelled")
            else:
                if self.gradients is not None:
                    self._backward()
                self._finish(ev.RUN_COMPLETED)
        except BaseException as exc:
            self.crash = exc
        finally:
            self.quiet.notify()

    # A node in an engine thread: ("ok", outputs, ctx, seconds, summaries) or ("error", message, ctx, seconds, None).
    # Its summaries are worked out here, while its outputs are still in this core's cache, unless the
    # run's events are pickled on another thread (summaries_later: that thread works them out).
    def _run_node(self, node: PlannedNode) -> tuple:
        ctx = NodeContext(node, self.options, self.device, self.emit, self.gradients, self.cancel, self.deadline,
                       self._capture_one if self.captures is not None else None, self.scripts)
        started = time.perf_counter()
        try:
            inputs = self._inputs(node)
            versions = {k: v._version for k, v in inputs.items() if isinstance(v, torch.Tensor)}
            if ctx.seed is not None:
                manual_seed(ctx.seed)
                np.random.seed(ctx.seed % 2**32)
                random.seed(ctx.seed)
            # Engine threads are kept between runs: each node starts with grad mode as a fresh thread has it.
            largest = node.cls.largest_shape(node.params, inputs)
            with torch.enable_grad(), element_limit(node.label, self.options.max_elements, largest):
                outputs = node.cls().run(ctx, dict(node.params), **inputs)
            ctx.flush_progress()
            self.stopped_inside = self.stopped_inside or ctx.stopped
            if not isinstance(outputs, dict):
                raise NodeError(f"returned {type(outputs).__name__} instead of its outputs")
            if any(inputs[k]._version != v for k, v in versions.items()):
                ctx.log(f"Warning: {node.label} changed an input tensor in place")
            if self.captures is not None:
                self._capture(node.id, outputs, ctx.steps)
            seconds = time.perf_counter() - started
            return "ok", outputs, ctx, seconds, self.summaries(outputs)
        except (NodeError, ParamError) as exc:
            return "error", readable(str(exc)), ctx, time.perf_counter() - started, None
        except Exception as exc:  # a torch error or a bug in a node: say it plainly, log the rest
            log.warning("node %s (%s) failed\n%s", node.id, node.type, traceback.format_exc())
            return "error", readable(_plain(exc)), ctx, time.perf_counter() - started, None

    def _inputs(self, node: PlannedNode) -> dict[str, Any]:
        values = {p.name: None for p in node.cls.inputs if p.optional}
        for port, (source, source_port) in node.inputs.items():
            produced = self.results[source]
            if source_port not in produced:
                raise NodeError(f"the node feeding '{port}' ({self.plan.nodes[source].label}) "
                                f"produced no '{source_port}' output")
            value = produced[source_port]
            if node.cls.mutates_inputs and isinstance(value, torch.Tensor):
                value = value.clone()
            values[port] = value
        return values

    def _collect(self, node: PlannedNode, result: tuple) -> str | None:
        """Record a finished node; return the run's failure message if it failed."""
        state, payload, ctx, seconds, summary = result
        for line in ctx.logs:
            _log(self.emit, self.outcome, self.options.run_id, node.id, line)
        if state == "error":
            self.outcome.nodes[node.id] = NodeResult("error", payload, seconds=seconds)
            self.emit(ev.Event(ev.NODE_ERROR, self.options.run_id, node.id, error=payload, level="error"))
            shared = sum(other.label == node.label for other in self.plan.nodes.values()) > 1
            return f"{node.label} ({node.id}) failed: {payload}" if shared else f"{node.label} failed: {payload}"
        self.outcome.nodes[node.id] = NodeResult("completed", summary=summary, seconds=seconds)
        self._done(node, payload)
        if self.cache is not None and node.id in self.keys:
            self.cache.put(self.keys[node.id], payload, ctx.logs)
        self.emit(ev.Event(ev.NODE_COMPLETED, self.options.run_id, node.id, summary=summary, level="success"))
        return None

    def _serve_from_cache(self, node: PlannedNode) -> bool:
        key = self.keys.get(node.id)
        hit = self.cache.get(key) if key else None
        if hit is None:
            return False
        outputs, logs = hit
        for line in logs:
            _log(self.emit, self.outcome, self.options.run_id, node.id, line)
        if self.captures is not None:
            self._capture(node.id, outputs, [])
        summary = self.summaries(outputs)
        self.outcome.nodes[node.id] = NodeResult("cached", summary=summary)
        self._done(node, outputs)
        self.emit(ev.Event(ev.NODE_CACHED, self.options.run_id, node.id, summary=summary, level="success"))
        return True

    def _capture(self, node_id: str, outputs: dict[str, Any], steps: list) -> None:
        ports = [(node_id, port, value) for port, value in outputs.items() if not port.startswith("__")]
        self._keep(ports + ([(node_id, "__steps__", steps)] if steps else []))

    def _capture_one(self, node_id: str, port: str, value: Any) -> None:
        """Keep one capture (a node's own extra ones, such as "__epoch3", come while it runs)."""
        self._keep([(node_id, port, value)])

    def _keep(self, items: list[tuple[str, str, Any]]) -> None:
        """Keep captures, (node, port, value), in one go (through a worker: one message)."""
        if not items:
            return
        try:
            self.captures.put_many(self.options.run_id, items)
        except RecordingStopped as stop:
            _log(self.emit, self.outcome, self.options.run_id, None, recording_stopped(stop.kept_bytes), "warning")

    def _backward(self) -> None:
        """Capture gradients, after the forward pass: one backward pass from the target, logged
        by name, and its gradients kept. A failing backward is logged; the run still succeeds."""
        target = pick_target(self.plan, self.results, self.options.auto_loss)
        level = "info" if target.shown else "warning"
        keep = self._keep if self.captures is not None else None
        if keep:
            keep([target_capture(target)])   # first: it says why, should the store stop the rest
        try:
            self.gradients.backward(target, self.results)
        except Exception as exc:
            log.warning("backward pass failed\n%s", traceback.format_exc())
            target.text, target.shown = f"Capture gradients: the backward pass failed: {_plain(exc)}", False
            level = "warning"
            if keep:
                keep([target_capture(target)])
        _log(self.emit, self.outcome, self.options.run_id, None, target.text, level)
        if keep:
            keep(list(self.gradients.kept(self.plan, self.results, target)))

    def _done(self, node: PlannedNode, outputs: dict[str, Any]) -> None:
        self.results[node.id] = outputs
        self.outcome.outputs[node.id] = outputs
        for other in self.dependents.get(node.id, ()):
            deps = self.waiting[other]
            deps.discard(node.id)
            if not deps:
                heapq.heappush(self.ready, (self.order[other], other))

    def _finish(self, kind: str, error: str | None = None) -> RunOutcome:
        if self.gradients is not None and kind != ev.RUN_COMPLETED and self.captures is not None:
            self._capture_one(RUN, TARGET, {"ran": False, "shown": False,
                                            "text": "Capture gradients: no backward pass ran: the run did not finish"})
        return _finish(self.plan, self.outcome, self.emit, kind, error)


def _naming(plan: Plan, emit: Emit) -> Emit:
    """Every node event carries the node's name too: people read names, ids are for machines."""
    def named(event: ev.Event) -> None:
        if event.node_id in plan.nodes and event.label is None:
            event.label = plan.nodes[event.node_id].label
        emit(event)
    return named


def _finish(plan: Plan, outcome: RunOutcome, emit: Emit, kind: str, error: str | None = None) -> RunOutcome:
    """Report every node that did not run, then exactly one terminal event."""
    for node_id in plan.nodes:
        if node_id not in outcome.nodes:
            outcome.nodes[node_id] = NodeResult("skipped")
            emit(ev.Event(ev.NODE_SKIPPED, outcome.run_id, node_id))
    outcome.status = ev.TERMINAL_STATUS[kind]
    outcome.error = error
    emit(ev.Event(kind, outcome.run_id, error=error, level="error" if error else "success"))
    return outcome


def recording_stopped(kept_bytes: int) -> str:
    return (f"Recording stopped after {round(kept_bytes / 2**20, 1):g} MB: this run's outputs are larger than "
            "the capture store's budget (CODEFYUI_RUN_OUTPUT_STORE_MAX_MB)")


def _summaries(outputs: dict[str, Any]) -> dict[str, Any]:
    return {port: ev.summarise(v) for port, v in outputs.items() if not port.startswith("__")}


def _log(emit: Emit, outcome: RunOutcome, run_id: str, node_id: str | None, text: str, level: str = "info") -> None:
    outcome.log.append(text)
    emit(ev.Event(ev.LOG, run_id, node_id, text=text, level=level))


ERROR_CHARS = 600   # a node's message past this keeps its start and its end (the hint)


def readable(message: str) -> str:
    """A node's message as a card and a log row show it: one that echoes a 15,000-character
    param back (a pasted list of columns) keeps what it says first and the advice at its end."""
    if len(message) <= ERROR_CHARS:
        return message
    return f"{message[:ERROR_CHARS * 2 // 3]} … {message[-ERROR_CHARS // 4:]}"


def _plain(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else 'no details'}"
