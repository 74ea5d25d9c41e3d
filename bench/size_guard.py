"""What the engine's element limit costs (apps/runs/engine/limits.py): the 20-node chain of
bench/capture_overhead.py and the CNN lesson example run with the guard and with it switched
off, interleaved, and a small training step (an MLP's forward, backward and SGD update: 22
ops) with and without it.

Prints the absolute cost per node and per op; the last line is the per-node cost in
microseconds. Run: .venv/bin/python bench/size_guard.py [--runs N]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from apps.graphs import document  # noqa: E402
from apps.runs.engine import RunOptions, execute, plan_run  # noqa: E402
from apps.runs.engine import executor  # noqa: E402
from apps.runs.engine.limits import element_limit  # noqa: E402
from bench.capture_overhead import twenty_node_graph  # noqa: E402


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_ms(plan, guarded: bool) -> float:
    executor.element_limit = element_limit if guarded else (lambda *args, **kwargs: contextlib.nullcontext())
    started = time.perf_counter()
    outcome = execute(plan, RunOptions(run_id=uuid.uuid4().hex, record=False), lambda e: None)
    assert outcome.status == "succeeded", outcome.error
    return (time.perf_counter() - started) * 1e3


def training_step_ms(guarded: bool, model, optimiser, x, y) -> float:
    started = time.perf_counter()
    with element_limit("bench", 10**8) if guarded else contextlib.nullcontext():
        optimiser.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimiser.step()
    return (time.perf_counter() - started) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(1)
    plan = plan_run(twenty_node_graph())
    cnn = plan_run(document.normalise(json.loads((EXAMPLES / "cnn.json").read_text())))
    chain: dict[bool, list[float]] = {True: [], False: []}
    lesson: dict[bool, list[float]] = {True: [], False: []}
    for i in range(args.runs + 5):
        for guarded in (True, False) if i % 2 else (False, True):
            elapsed = run_ms(plan, guarded)
            lesson_elapsed = run_ms(cnn, guarded) if i % 4 == 0 else None
            if i >= 5:
                chain[guarded].append(elapsed)
                if lesson_elapsed is not None:
                    lesson[guarded].append(lesson_elapsed)
    executor.element_limit = element_limit

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    step: dict[bool, list[float]] = {True: [], False: []}
    for i in range(args.runs * 5 + 20):
        for guarded in (True, False) if i % 2 else (False, True):
            elapsed = training_step_ms(guarded, model, optimiser, x, y)
            if i >= 20:
                step[guarded].append(elapsed)

    on, off = statistics.median(chain[True]), statistics.median(chain[False])
    per_node_us = (on - off) * 1e3 / len(plan.nodes)
    s_on, s_off = statistics.median(step[True]), statistics.median(step[False])
    print(f"20-node chain of [64, 256] float32, {args.runs} runs each, interleaved")
    print(f"median run, guard off: {off:.2f} ms; guard on: {on:.2f} ms (ratio {on / off:.3f})")
    c_on, c_off = statistics.median(lesson[True]), statistics.median(lesson[False])
    print(f"CNN lesson example ({len(cnn.nodes)} nodes): guard off {c_off:.2f} ms; on {c_on:.2f} ms "
          f"(ratio {c_on / c_off:.3f})")
    print(f"MLP training step (32x64 -> 128 -> 10, SGD): guard off {s_off:.3f} ms; on {s_on:.3f} ms "
          f"(ratio {s_on / s_off:.3f})")
    print(f"figure: size_guard_us_per_node = {per_node_us:.1f}")


if __name__ == "__main__":
    main()
