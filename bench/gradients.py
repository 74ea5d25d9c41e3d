"""What Capture gradients costs: a run of a four-layer MLP (a [256, 512] batch, Linear 512 → 512
and ReLU three times, then Linear 512 → 10, then BackwardOnce) with Capture gradients and Record
node outputs on, through a run worker process as the server runs it (every output and every
gradient crosses to this process by shared memory and goes into the capture store here),
against the same forward pass and .backward() written by hand in this process. Both on one
torch thread and at the workers' CPU priority (nice 10), interleaved; prints the median of
each and their ratio, and the same run without Capture gradients for scale.

Goal (issue 14): at most 1.25×.
Run: .venv/bin/python bench/gradients.py [--runs N]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from apps.graphs import document  # noqa: E402
from apps.runs.engine import plan_run  # noqa: E402
from apps.runs.engine import gradients as gr  # noqa: E402
from apps.runs.store import MemoryCaptureStore  # noqa: E402
from apps.runs.workers import NICE, WorkerPool  # noqa: E402

import capture_overhead  # noqa: E402  (bench/, beside this script)

BATCH, WIDTH, HIDDEN, CLASSES = 256, 512, 3, 10


def mlp_graph() -> dict:
    specs = [("TensorInput", {"shape": f"{BATCH},{WIDTH}", "value_mode": "random", "seed": 1})]
    for _ in range(HIDDEN):
        specs += [("Linear", {"in_features": WIDTH, "out_features": WIDTH}), ("Activation", {"function": "relu"})]
    specs += [("Linear", {"in_features": WIDTH, "out_features": CLASSES}), ("BackwardOnce", {})]
    nodes = [{"id": "start", "type": "Start"}]
    edges = [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "n0"}]
    for i, (kind, params) in enumerate(specs):
        nodes.append({"id": f"n{i}", "type": kind, "data": {"params": params}})
        if i:
            edges.append({"id": f"e{i}", "source": f"n{i-1}", "sourceHandle": "tensor",
                          "target": f"n{i}", "targetHandle": "tensor"})
    return document.normalise({"nodes": nodes, "edges": edges})


def through(pool: WorkerPool, plan, store, gradients: bool = True) -> float:
    """One run as the server runs it, timed to its terminal event (capture_overhead.through):
    its outputs, and with Capture gradients the gradients, come back here. Without Capture
    gradients BackwardOnce runs the same backward pass itself and nothing of it is kept."""
    seconds, run_id = capture_overhead.through(pool, plan, store, gradients=gradients)
    assert not gradients or store.get(run_id, gr.RUN, gr.TARGET).value["ran"], "no backward pass ran"
    store.drop_run(run_id)
    return seconds


def by_hand() -> float:
    """The same forward pass and backward pass, written as a student's script would."""
    started = time.perf_counter()
    layers = []
    for _ in range(HIDDEN):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(WIDTH, CLASSES))
    x = torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(1)).requires_grad_(True)  # as TensorInput draws
    model(x).sum().backward()
    return time.perf_counter() - started


def interleaved(runs: int, *runners) -> list[list[float]]:
    """The seconds each runner reports, run in turns (the order rotating), after warm-up runs."""
    timings: list[list[float]] = [[] for _ in runners]
    for i in range(runs + 3):
        for k in range(len(runners)):
            which = (i + k) % len(runners)
            seconds = runners[which]()
            if i >= 3:  # warm-up runs are not counted
                timings[which].append(seconds)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(1)
    os.nice(NICE)   # the workers' priority: on a busy machine both sides get the same share
    plan = plan_run(mlp_graph())
    store = MemoryCaptureStore()
    pool = WorkerPool(1, 0, 1, lambda: None).start()   # one worker on one torch thread
    try:
        while not pool.free():
            time.sleep(0.05)
        product, plain, hand = interleaved(args.runs, lambda: through(pool, plan, store),
                                           lambda: through(pool, plan, store, gradients=False), by_hand)
    finally:
        pool.close()
    p, o, h = (statistics.median(t) for t in (product, plain, hand))
    print(f"MLP [{BATCH}, {WIDTH}] → {HIDDEN} × (Linear {WIDTH} + ReLU) → Linear {CLASSES}, {args.runs} runs each, "
          "one torch thread, interleaved")
    print(f"by hand (forward + .backward()): median {h * 1e3:.1f} ms")
    print(f"the same run through a run worker, Record on, Capture gradients off: median {o * 1e3:.1f} ms")
    print(f"Capture gradients through a run worker (Record on): median {p * 1e3:.1f} ms "
          f"({p / o:.2f}× the run without it)")
    print(f"figure: gradients_ratio = {p / h:.3f}")


if __name__ == "__main__":
    main()
