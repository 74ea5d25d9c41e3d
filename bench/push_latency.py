"""Push latency: from a node finishing in the engine to its badge fragment arriving at a
WebSocket client, over a 200-node run (the whole path: engine event -> Run row -> channel
layer -> consumer -> rendered hx-swap-oob fragment). Prints median and p95.

Run: .venv/bin/python bench/push_latency.py
"""
from __future__ import annotations

import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
_tmp = tempfile.mkdtemp(prefix="codefyui-bench-")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "codefyui.settings")
os.environ["DATABASE_URL"] = f"sqlite:///{_tmp}/bench.sqlite3"
os.environ["CODEFYUI_VAR_DIR"] = _tmp

import django  # noqa: E402

django.setup()

import torch  # noqa: E402
from channels.db import database_sync_to_async  # noqa: E402
from channels.routing import URLRouter  # noqa: E402
from channels.testing import WebsocketCommunicator  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from apps.graphs import document  # noqa: E402
from apps.runs import service  # noqa: E402
from apps.runs.engine import events as ev  # noqa: E402
from apps.runs.models import Run  # noqa: E402
from codefyui.routing import websocket_urlpatterns  # noqa: E402

NODES = 200
BADGE = re.compile(r'id="badge-(n\d+)" class="badge badge-completed"')


def chain() -> dict:
    nodes = [{"id": "start", "type": "Start"},
             {"id": "n0", "type": "TensorInput", "data": {"params": {"shape": "1,16", "value_mode": "ones"}}}]
    edges = [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "n0"}]
    for i in range(1, NODES - 1):
        nodes.append({"id": f"n{i}", "type": "ScalarMultiply", "data": {"params": {"scalar": 1.0}}})
        edges.append({"id": f"e{i}", "source": f"n{i-1}", "sourceHandle": "tensor", "target": f"n{i}", "targetHandle": "tensor"})
    return document.normalise({"nodes": nodes, "edges": edges})


async def measure() -> list[float]:
    user = await database_sync_to_async(lambda: get_user_model().objects.create_user("bench"))()
    run = await database_sync_to_async(Run.objects.create)(owner=user)
    finished: dict[str, float] = {}
    service.add_listener(lambda e: e.kind == ev.NODE_COMPLETED and finished.setdefault(e.node_id, e.time))
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{run.pk}/")
    communicator.scope["user"] = user
    assert (await communicator.connect())[0]
    await communicator.receive_from(timeout=5)  # catch-up
    doc = chain()
    await database_sync_to_async(service._enqueue)(run, service.plan(doc), service.run_options(doc))
    arrived: dict[str, float] = {}
    while len(arrived) < NODES - 1:
        message = await communicator.receive_from(timeout=30)
        now = time.time()
        for node_id in BADGE.findall(message):
            arrived.setdefault(node_id, now)
    await database_sync_to_async(service.wait_for)(run.pk)
    await communicator.disconnect()
    return [(arrived[n] - finished[n]) * 1e3 for n in arrived if n in finished]


def main() -> None:
    torch.set_num_threads(1)
    call_command("migrate", verbosity=0)
    latencies = sorted(asyncio.run(measure()))
    p95 = latencies[int(0.95 * (len(latencies) - 1))]
    print(f"{len(latencies)} nodes, in-memory channel layer, SQLite")
    print(f"median push latency: {statistics.median(latencies):.2f} ms")
    print(f"p95 push latency:    {p95:.2f} ms")
    print(f"figure: push_latency_p95_ms = {p95:.2f}")


if __name__ == "__main__":
    main()
