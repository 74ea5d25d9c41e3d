"""What a new run worker costs, forked from the forkserver (apps/runs/worker_start.py) and, side
by side in the same invocation, started as before it (multiprocessing's spawn: a fresh
interpreter that imports torch); and the two classroom goals that cost decides:

1. A replacement worker: one worker's process is killed (as a crash or the memory cap ends it;
   Stop and a timeout end it the same way) and the pool starts another. Seconds from the kill
   until the new worker is ready, and its CPU seconds: the new worker's own (/proc/<pid>/stat
   at its "ready") plus the forkserver's meanwhile (the fork). Goal: < 0.2 s, < 0.3 CPU-s.
2. Four students each run a runaway at the element limit (a [10000, 10000] random tensor, 10^8
   elements as CODEFYUI_MAX_TENSOR_ELEMENTS allows, times itself: one MatMul of a minute or
   more that never looks at Stop), as many as a 2-core server's default pool has workers and
   spares.
   Another student's tiny run (examples/walkthrough.json, as the server runs it: recorded) is
   timed against its time alone: the runaway held longest is paused and a stand-in worker
   starts and takes it; then again, the stand-in kept idle taking it. Goal: within 0.5 s of
   its time alone.
3. With four runaways going, Stop of the oldest, --stops times (a runaway stopped, or ended by
   itself, is replaced by a new one once a worker is free): seconds from Stop until the run
   reads cancelled, its worker killed. Goal: within 1 s, every time.

The pool is driven as the server drives it (service._Scheduler: a queue in front, at most
CODEFYUI_MAX_CONCURRENT_RUNS runs computing, a paused one not counted), in this process, without
Django or HTTP; the workers' threads as start_workers gives them (cores / computing runs).

Run: .venv/bin/python bench/worker_start.py [--methods fork,spawn] [--replacements N] [--stops N]
"""
from __future__ import annotations

import argparse
import collections
import functools
import gc
import json
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apps.graphs import document  # noqa: E402
from apps.runs import worker_start  # noqa: E402
from apps.runs.engine import RunOptions, plan_run  # noqa: E402
from apps.runs.engine import events as ev  # noqa: E402
from apps.runs.store import MemoryCaptureStore  # noqa: E402
from apps.runs.workers import LONG_RUN_S, Assignment, Job, WorkerPool  # noqa: E402
from codefyui import conf  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")
WORKERS, LANES = 2, 4     # a 2-core server's default: CODEFYUI_RUN_WORKERS 2, CODEFYUI_MAX_CONCURRENT_RUNS 4
TINY_ALONE, TINY_LOADED = 5, 3
WAIT_S = 300              # for anything the bench waits on


def cpu_s(pid: int | None) -> float:
    """A process's CPU seconds so far (user and system), 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


@functools.cache
def runaway():
    """Start -> a [10000, 10000] random tensor (the element limit) -> it times itself."""
    side = int(conf.MAX_TENSOR_ELEMENTS ** 0.5)
    return plan_run(document.normalise({
        "nodes": [{"id": "start", "type": "Start"},
                  {"id": "big", "type": "TensorCreate",
                   "data": {"params": {"shape": f"{side},{side}", "fill": "randn"}}},
                  {"id": "mm", "type": "MatMul"}],
        "edges": [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "big"},
                  {"id": "a", "source": "big", "sourceHandle": "tensor", "target": "mm", "targetHandle": "tensor_a"},
                  {"id": "b", "source": "big", "sourceHandle": "tensor", "target": "mm", "targetHandle": "tensor_b"}]}))


@functools.cache
def tiny():
    return plan_run(document.normalise(json.loads((ROOT / "examples" / "walkthrough.json").read_text())))


class Run:
    """One run as the server holds it: when it was submitted, started computing, ended, and how."""

    def __init__(self, plan, record: bool, seed: int | None = None):
        self.job = Job(plan, RunOptions(run_id=uuid.uuid4().hex, record=record, seed=seed))
        self.submitted = self.ended_at = 0.0
        self.computing = threading.Event()   # its last node runs (a runaway: the MatMul)
        self.computing_at = 0.0
        self.ended = threading.Event()
        self.status = ""
        self._last = list(plan.nodes)[-1]

    def emit(self, event: ev.Event) -> None:
        if event.kind == ev.NODE_RUNNING and event.node_id == self._last:
            self.computing_at = time.perf_counter()
            self.computing.set()
        elif event.kind in ev.TERMINAL:
            self.status, self.ended_at = event.kind, time.perf_counter()
            self.ended.set()


class Server:
    """The pool and the queue in front of it, as service._Scheduler drives them."""

    def __init__(self, start, size: int, spares: int):
        self.queue: collections.deque[Run] = collections.deque()
        self.computing = 0
        self.lock = threading.RLock()
        self.store = MemoryCaptureStore()
        threads = max(1, (os.cpu_count() or 1) // max(1, min(size, LANES)))
        self.pool = WorkerPool(size, conf.RUN_MEMORY_MAX_MB, threads, self.dispatch, spares,
                               waiting=lambda: bool(self.queue), start=start)
        self.ready = threading.Condition()   # told each time a worker is ready or a run ends
        self.pool.start()

    def submit(self, run: Run) -> Run:
        run.submitted = time.perf_counter()
        with self.lock:
            self.queue.append(run)
        self.dispatch()
        return run

    def dispatch(self) -> None:
        with self.lock:
            while self.queue and self.computing - self.pool.paused() < LANES and self.pool.free():
                run = self.queue.popleft()
                self.computing += 1
                if not self.pool.run(Assignment(run.job, run.emit, self.store, None, self._ended)):
                    self.computing -= 1
                    self.queue.appendleft(run)
                    break
        with self.ready:
            self.ready.notify_all()

    def _ended(self, assignment: Assignment) -> None:
        with self.lock:
            self.computing -= 1
        self.dispatch()

    def until(self, condition, what: str) -> None:
        """Wait until ``condition()`` holds: checked each time a worker is ready or a run ends,
        and every 10 ms for what the pool tells no one (a paused run resumed)."""
        deadline = time.monotonic() + WAIT_S
        with self.ready:
            while not condition():
                if time.monotonic() > deadline:
                    raise SystemExit(f"never {what}")
                self.ready.wait(0.01)

    def close(self) -> None:
        self.pool.close()


def replacement(server: Server) -> tuple[float, float]:
    """Kill the pool's idle worker; (seconds until its replacement is ready, that replacement's
    CPU seconds with the forkserver's meanwhile)."""
    server.until(lambda: server.pool.idle() == 1, "a worker ready")
    [old] = server.pool.pids()
    forkserver = worker_start.forkserver_pid()
    forkserver_before = cpu_s(forkserver)
    killed = time.perf_counter()
    os.kill(old, 9)
    server.until(lambda: server.pool.idle() == 1 and server.pool.pids() != [old], "a replacement ready")
    ready = time.perf_counter() - killed
    [new] = server.pool.pids()
    return ready, cpu_s(new) + cpu_s(forkserver) - forkserver_before


def tiny_runs(server: Server, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        run = server.submit(Run(tiny(), record=True, seed=7))
        if not run.ended.wait(WAIT_S):
            raise SystemExit("a tiny run never ended")
        assert run.status == ev.RUN_COMPLETED, run.status
        times.append(run.ended_at - run.submitted)
    return times


def runaways_going(server: Server, count: int = LANES) -> list[Run]:
    """``count`` runaways submitted, once each computes and has held its worker LONG_RUN_S (the
    spares take the third and fourth once the first two held theirs that long)."""
    runaways = [server.submit(Run(runaway(), record=False)) for _ in range(count)]
    for run in runaways:
        if not run.computing.wait(WAIT_S):
            raise SystemExit("the runaways never all computed")
    # A run waits for a pause only once every runaway is long: the pool's rule, not a worker's start
    time.sleep(max(0.0, LONG_RUN_S - (time.perf_counter() - max(r.computing_at for r in runaways))))
    return runaways


def beside_runaways(start) -> tuple[list[float], list[float]]:
    """Part 2 on a fresh pool of the 2-core default: the tiny run alone, then beside four runaways."""
    server = Server(start, WORKERS, LANES - WORKERS)
    try:
        server.until(lambda: server.pool.idle() == LANES, "every worker ready")
        tiny_runs(server, 2)   # warm-up: what the walkthrough's first run loads
        alone = tiny_runs(server, TINY_ALONE)
        runaways = runaways_going(server)
        loaded = []
        for _ in range(TINY_LOADED):
            loaded += tiny_runs(server, 1)
            server.until(lambda: server.pool.paused() == 0, "the paused runaway resumed")
        for run in runaways:
            server.pool.cancel(run.job.run_id)
        return alone, loaded
    finally:
        server.close()


def stops(start, tries: int) -> list[float]:
    """Part 3 on a fresh pool of the 2-core default (no stand-in: every runaway holds a worker or a
    spare, none is paused)."""
    server = Server(start, WORKERS, LANES - WORKERS)
    try:
        server.until(lambda: server.pool.idle() == LANES, "every worker ready")
        runaways = runaways_going(server)
        seconds = []
        while len(seconds) < tries:
            for run in [r for r in runaways if r.ended.is_set()]:   # stopped, or its MatMul of minutes ended
                runaways.remove(run)
                # a free worker takes the next one (none waits meanwhile, so none is paused)
                server.until(lambda: server.pool.free() > 0, "the stopped runaway's worker replaced")
                runaways += runaways_going(server, 1)
            oldest = min(runaways, key=lambda r: r.submitted)
            stopped = time.perf_counter()
            server.pool.cancel(oldest.job.run_id)
            if not oldest.ended.wait(WAIT_S):
                raise SystemExit("a stopped runaway never ended")
            if oldest.status == ev.RUN_STOPPED:   # not one that ended by itself at that moment
                seconds.append(oldest.ended_at - stopped)
        for run in runaways:
            server.pool.cancel(run.job.run_id)
        return seconds
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="fork,spawn", help="fork (the forkserver), spawn (before it)")
    parser.add_argument("--replacements", type=int, default=6, help="replacement workers timed, per method")
    parser.add_argument("--stops", type=int, default=20)
    args = parser.parse_args()
    methods = args.methods.split(",")
    tiny(), runaway()
    gc.collect()
    gc.freeze()   # as the server does (codefyui/asgi.py): a full collection here would delay its threads

    single = {method: Server(getattr(worker_start, method), 1, 0) for method in methods}
    started: dict[str, list[tuple[float, float]]] = {method: [] for method in methods}
    try:
        for _ in range(args.replacements):   # in turns, so the machine's other load weighs on both alike
            for method in methods:
                started[method].append(replacement(single[method]))
    finally:
        for server in single.values():
            server.close()
    for method in methods:
        ready, cpu = [r for r, _ in started[method]], [c for _, c in started[method]]
        print(f"{method}: a replacement worker ready after median {statistics.median(ready):.3f} s "
              f"(max {max(ready):.3f} s), {statistics.median(cpu):.2f} CPU-s (max {max(cpu):.2f}) "
              f"over {len(ready)} replacements")

    for method in methods:
        (alone, loaded), stop_s = beside_runaways(getattr(worker_start, method)), stops(getattr(worker_start, method),
                                                                                      args.stops)
        alone = statistics.median(alone)
        print(f"{method}: the walkthrough run alone median {alone:.3f} s; beside four runaways at the element limit "
              f"{', '.join(f'{s:.3f}' for s in loaded)} s (the first waits for a stand-in to start), "
              f"worst {max(loaded) - alone:+.3f} s against alone (goal: within 0.5 s)")
        print(f"{method}: Stop of a runaway with four going: median {statistics.median(stop_s):.3f} s, "
              f"max {max(stop_s):.3f} s, within 1 s in {sum(s <= 1.0 for s in stop_s)} of {len(stop_s)}")
    ready, cpu = [r for r, _ in started[methods[0]]], [c for _, c in started[methods[0]]]
    print(f"{methods[0]}: worker_cpu_s = {statistics.median(cpu):.3f}")
    print(f"figure: worker_ready_s = {statistics.median(ready):.3f}")


if __name__ == "__main__":
    main()
