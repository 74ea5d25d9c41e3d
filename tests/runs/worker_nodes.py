"""Test-only nodes for the run-worker tests. They import no Django, so the workers import
this module themselves when a planned node names it. Each writes its process id to
``<path>.pid`` when it starts, so a test knows where and that it runs (``running``: whether
that process still does)."""
from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import torch

from apps.graphs.nodes.base import Node, Param, Port, register


def running(pid: int) -> bool:
    """Whether the process is alive: a zombie has ended, only its parent's wait is left."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:   # gone (reaped)
        return False


def _started(path: str) -> None:
    Path(f"{path}.pid").write_text(str(os.getpid()))


@register
class Hold(Node):
    """Holds the run until ``<path>.go`` exists (at most 30 s)."""
    type = "test:Hold"
    category = "Utility"
    description = "Holds a run until the test releases it."
    outputs = (Port("tensor"),)
    params = (Param("path", "string", ""),)
    cacheable = False

    def run(self, ctx, params):
        _started(params["path"])
        deadline = time.monotonic() + 30
        while not Path(f"{params['path']}.go").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return {"tensor": torch.ones(2)}


@register
class Spin(Node):
    """A node stuck in a long loop: it never looks at Stop (60 s of pure computation)."""
    type = "test:Spin"
    category = "Utility"
    description = "Computes for a minute."
    outputs = (Port("tensor"),)
    params = (Param("path", "string", ""),)
    cacheable = False

    def run(self, ctx, params):
        _started(params["path"])
        deadline, x = time.monotonic() + 60, 0
        while time.monotonic() < deadline:
            x += 1
        return {"tensor": torch.tensor([float(x)])}


@register
class Hog(Node):
    """Takes ``mb`` MB of memory, 16 MB at a time, and holds it."""
    type = "test:Hog"
    category = "Utility"
    description = "Uses a lot of memory."
    outputs = (Port("tensor"),)
    params = (Param("path", "string", ""), Param("mb", "int", 64))
    cacheable = False

    def run(self, ctx, params):
        _started(params["path"])
        held = []
        for _ in range(params["mb"] // 16):
            held.append(torch.ones(4 * 2**20))  # 16 MB, every page written
            time.sleep(0.01)
        return {"tensor": torch.tensor([float(len(held))])}


@register
class TinyModel(Node):
    """A model of one Linear layer (2 -> 1), its weights from the run's seed."""
    type = "test:TinyModel"
    category = "Utility"
    description = "A tiny model."
    outputs = (Port("model", "MODEL"),)
    cacheable = False

    def run(self, ctx, params):
        torch.manual_seed(ctx.seed or 0)
        return {"model": torch.nn.Sequential(torch.nn.Linear(2, 1))}


def graph(node_type: str, **params) -> dict:
    """Start -> one test node."""
    return {"nodes": [{"id": "start", "type": "Start"},
                      {"id": "node", "type": node_type, "data": {"label": node_type[5:], "params": params}}],
            "edges": [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "node"}]}


def saver_graph(path: str = "tiny.pt") -> dict:
    """Start -> a tiny model -> ModelSaver."""
    doc = graph("test:TinyModel")
    doc["nodes"].append({"id": "saver", "type": "ModelSaver", "data": {"label": "ModelSaver", "params": {"path": path}}})
    doc["edges"].append({"id": "m", "source": "node", "sourceHandle": "model", "target": "saver", "targetHandle": "model"})
    return doc


def broken_worker(sock, threads) -> None:
    """A run worker that dies while it starts (as with a broken install)."""
    raise SystemExit(3)


def stalled_worker(sock, threads) -> None:
    """A run worker that never becomes ready: it waits until the server lets go of it."""
    sock.recv(1)


def sigint_ignored(pid: int | str = "self") -> bool:
    """Whether the process ignores SIGINT (its SigIgn mask in /proc): the kernel then discards
    a SIGINT sent to it at once, so none can arrive later."""
    line = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("SigIgn:"))
    return bool(int(line.split()[1], 16) & 1 << (signal.SIGINT - 1))


def report(sock, threads) -> None:
    """A process started as a run worker that tells what it started with, then waits until the
    test lets go of it."""
    import pickle
    import random

    import numpy as np

    files = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
             if os.path.exists(f"/proc/self/fd/{fd}")]
    sock.sendall(pickle.dumps({
        "parent": os.getppid(), "torch": torch.rand(4).tolist(), "numpy": np.random.rand(4).tolist(),
        "python": random.random(), "sockets": sum(f.startswith("socket:") for f in files),
        "cuda": torch.cuda.is_initialized(), "sigint_ignored": sigint_ignored(), "args": threads}))
    sock.shutdown(socket.SHUT_WR)   # the test reads up to here
    sock.recv(1)
