"""What Record node outputs costs: a 20-node chain of [64, 256] float tensors, run with
recording on and off, interleaved; prints the ratio of median run times, in this process
(the engine alone) and through a run worker process as the server runs it (each capture
crosses to this process by shared memory and goes into the store here).

Goals: recording costs at most 15 % (issue: foundation), at most 10 % with runs in
worker processes (issue 11): the last line is the worker path's ratio.
Run: .venv/bin/python bench/capture_overhead.py [--runs N]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from apps.graphs import document  # noqa: E402
from apps.runs.engine import RunOptions, execute, plan_run  # noqa: E402
from apps.runs.store import MemoryCaptureStore  # noqa: E402
from apps.runs.workers import Assignment, Job, WorkerPool  # noqa: E402

CHAIN = ["ScalarMultiply", "Activation", "Softmax", "Add"]  # cycled to 19 nodes after the input


def twenty_node_graph() -> dict:
    nodes = [{"id": "start", "type": "Start"},
             {"id": "n0", "type": "TensorInput", "data": {"params": {"shape": "64,256", "value_mode": "random", "seed": 1}}}]
    edges = [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "n0"}]
    for i in range(1, 20):
        kind = CHAIN[(i - 1) % len(CHAIN)]
        nodes.append({"id": f"n{i}", "type": kind, "data": {"params": {"scalar": 0.5} if kind == "ScalarMultiply" else {}}})
        if kind == "Add":  # a residual: the previous node plus the one before it
            edges += [{"id": f"a{i}", "source": f"n{i-1}", "sourceHandle": "tensor", "target": f"n{i}", "targetHandle": "tensor_a"},
                      {"id": f"b{i}", "source": f"n{i-2}", "sourceHandle": "tensor", "target": f"n{i}", "targetHandle": "tensor_b"}]
        else:
            edges.append({"id": f"e{i}", "source": f"n{i-1}", "sourceHandle": "tensor", "target": f"n{i}", "targetHandle": "tensor"})
    return document.normalise({"nodes": nodes, "edges": edges})


def interleaved(runs: int, run_once) -> tuple[float, float]:
    """Median seconds ``run_once(record)`` reports with recording on and off, taken in turns."""
    timings: dict[bool, list[float]] = {True: [], False: []}
    for i in range(runs + 5):
        for record in (True, False) if i % 2 else (False, True):
            seconds = run_once(record)
            if i >= 5:  # warm-up runs are not counted
                timings[record].append(seconds)
    return statistics.median(timings[True]), statistics.median(timings[False])


def in_this_process(plan, store, record: bool) -> float:
    started = time.perf_counter()
    outcome = execute(plan, RunOptions(run_id=uuid.uuid4().hex, record=record), lambda e: None, captures=store)
    assert outcome.status == "succeeded", outcome.error
    return time.perf_counter() - started


def through(pool: WorkerPool, plan, store, **options) -> tuple[float, str]:
    """One run as the server runs it (``options``: its RunOptions): in a worker, its events and
    captures coming back here. Returns the seconds from handing it over to its terminal event
    (its captures are in the store by then; the worker's tidying after that, its "done", is
    waited for, not counted) and the run's id. bench/gradients.py times its runs so too."""
    ended, free, ends = threading.Event(), threading.Event(), []

    def emit(event):
        if event.kind == "run_completed":
            ends.append(time.perf_counter())
            ended.set()

    run_id = uuid.uuid4().hex
    assignment = Assignment(Job(plan, RunOptions(run_id=run_id, **options)), emit, store, None, lambda a: free.set())
    started = time.perf_counter()
    assert pool.run(assignment)
    ended.wait(60)
    assert ends, "the run did not complete"
    free.wait(60)
    return ends[0] - started, run_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(1)
    plan = plan_run(twenty_node_graph())
    store = MemoryCaptureStore()
    on, off = interleaved(args.runs, lambda record: in_this_process(plan, store, record))
    print(f"20 nodes of [64, 256] float32, {args.runs} runs each, interleaved")
    print(f"in this process: median run, recording off {off * 1e3:.2f} ms, on {on * 1e3:.2f} ms: ratio {on / off:.3f}")
    pool = WorkerPool(1, 0, 1, lambda: None).start()
    try:
        while not pool.free():
            time.sleep(0.05)
        w_on, w_off = interleaved(args.runs, lambda record: through(pool, plan, store, record=record)[0])
    finally:
        pool.close()
    print(f"through a run worker: median run, recording off {w_off * 1e3:.2f} ms, on {w_on * 1e3:.2f} ms: "
          f"ratio {w_on / w_off:.3f} (each capture {(w_on - w_off) / 20 * 1e3:.3f} ms)")
    print(f"store after the runs: {store.usage()}")
    print(f"figure: capture_overhead_ratio = {w_on / w_off:.3f}")


if __name__ == "__main__":
    main()
