"""Training speed: the digit lesson (examples/train-digits.json: Digits, its small CNN, its
epochs, batch size, optimizer and validation) (a) as a plain PyTorch script in this process's
main thread and (b) as the graph through the product's run path, in a run worker as the server
runs it, with Record node outputs off and on. Same torch thread count for both, and the same
CPU priority: this process lowers its own to the workers' (workers.NICE), so a busy machine's
other load weighs on both alike. Runs interleaved; samples per second of each (training samples
× epochs / seconds of the whole run: building, validation each epoch and the test accuracy
included), from the fastest of the runs (the least disturbed by the machine's other load), and
the ratios.

Run: .venv/bin/python bench/training.py [--runs N] [--threads T]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from apps.graphs import document  # noqa: E402
from apps.runs.engine import RunOptions, plan_run  # noqa: E402
from apps.runs.store import MemoryCaptureStore  # noqa: E402
from apps.runs.workers import NICE, Assignment, Job, WorkerPool  # noqa: E402

LESSON = Path(__file__).resolve().parent.parent / "examples" / "train-digits.json"


def lesson() -> tuple[dict, dict[str, dict]]:
    doc = document.load(LESSON.read_text())
    return doc, {n["id"]: n["data"]["params"] for n in doc["nodes"]}


def plain_model() -> nn.Module:
    """The lesson's CNN as a script would write it (checked against the graph's below)."""
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Flatten(), nn.Linear(64, 10))


def digits() -> tuple[TensorDataset, TensorDataset]:
    """scikit-learn's Digits as [N, 1, 8, 8] images from 0 to 1; every fifth one kept for testing."""
    data = load_digits()
    x = torch.tensor(data.images, dtype=torch.float32)[:, None] / 16
    y = torch.tensor(data.target, dtype=torch.int64)
    test = np.arange(len(y)) % 5 == 4
    return TensorDataset(x[~test], y[~test]), TensorDataset(x[test], y[test])


def plain_run(params: dict[str, dict], train: TensorDataset, test: TensorDataset) -> float:
    """The whole lesson by hand: build, train with validation each epoch, test accuracy. Seconds."""
    started = time.perf_counter()
    torch.manual_seed(42)
    model = plain_model()
    optimizer = getattr(torch.optim, params["optimizer"]["type"])(model.parameters(), lr=params["optimizer"]["lr"])
    loss_fn = nn.CrossEntropyLoss()
    loader = DataLoader(train, batch_size=params["train_loader"]["batch_size"], shuffle=True,
                        generator=torch.Generator().manual_seed(42))
    val = DataLoader(test, batch_size=params["val_loader"]["batch_size"])
    for _ in range(params["train"]["epochs"]):
        model.train()
        total = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        model.eval()
        with torch.no_grad():
            val_total = sum(loss_fn(model(x), y).item() for x, y in val)
    with torch.no_grad():
        correct = sum(int((model(x).argmax(1) == y).sum()) for x, y in DataLoader(test, batch_size=256))
    assert total > 0 and val_total > 0 and correct > 0
    return time.perf_counter() - started


def product_run(pool: WorkerPool, plan, store, record: bool) -> float:
    """One run of the lesson graph as the server runs it: in a worker, its events and captures coming back."""
    done, ends = threading.Event(), []
    started = time.perf_counter()
    assignment = Assignment(Job(plan, RunOptions(run_id=uuid.uuid4().hex, record=record, seed=42)),
                            lambda e: e.kind == "run_completed" and ends.append(e), store, None, lambda a: done.set())
    assert pool.run(assignment)
    done.wait(600)
    assert ends, "the lesson run did not complete"
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    os.nice(NICE)
    torch.set_num_threads(args.threads)
    doc, params = lesson()
    plan = plan_run(doc)
    train, test = digits()
    graph_model = plan.nodes["model"].cls().run(_Ctx(), dict(plan.nodes["model"].params))["model"]
    assert sum(p.numel() for p in graph_model.parameters()) == sum(p.numel() for p in plain_model().parameters()), \
        "plain_model() no longer matches the lesson's layers"
    samples = len(train) * params["train"]["epochs"]
    store = MemoryCaptureStore()
    pool = WorkerPool(1, 0, args.threads, lambda: None).start()
    times: dict[str, list[float]] = {"plain": [], "off": [], "on": []}
    try:
        while not pool.free():
            time.sleep(0.05)
        plain_run(params, train, test)  # warm: first calls load kernels, the worker its dataset
        product_run(pool, plan, store, False)
        for i in range(args.runs):
            order = ("plain", "off", "on") if i % 2 else ("on", "off", "plain")
            for what in order:
                times[what].append(plain_run(params, train, test) if what == "plain"
                                   else product_run(pool, plan, store, what == "on"))
    finally:
        pool.close()
    rate = {what: samples / min(seconds) for what, seconds in times.items()}
    print(f"digit lesson: {len(train)} training samples × {params['train']['epochs']} epochs, "
          f"batch {params['train_loader']['batch_size']}, validation each epoch; {args.threads} torch thread(s); "
          f"fastest of {args.runs} interleaved runs")
    print(f"plain PyTorch (main thread): {rate['plain']:,.0f} samples/s")
    print(f"product, Record off (run worker): {rate['off']:,.0f} samples/s, ratio {rate['off'] / rate['plain']:.3f}")
    print(f"product, Record on  (run worker): {rate['on']:,.0f} samples/s, ratio {rate['on'] / rate['plain']:.3f}")
    print(f"figure: training_ratio_record_off = {rate['off'] / rate['plain']:.3f}")


class _Ctx:
    """Enough of a RunContext to build the lesson's model once, to check plain_model() against it."""
    device, seed, node_id = torch.device("cpu"), 42, "model"

    def check_size(self, elements, what):
        pass

    def module(self, build):
        return build()

    def unguarded(self):
        return contextlib.nullcontext()

    def log(self, text):
        pass


if __name__ == "__main__":
    main()
