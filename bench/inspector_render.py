"""Inspector render cost: server time and bytes of the Forward fragment (the Inspector
column) for a [1, 3, 224, 224] output and for the walkthrough's Softmax, median and p95,
then the same with 30 concurrent clients.

Goals (issue: Teaching Inspector): the [1, 3, 224, 224] fragment in <= 11 ms and <= 100 KB at
the median; 30 concurrent clients at p95 <= 250 ms.
Run: .venv/bin/python bench/inspector_render.py
"""
from __future__ import annotations

import asyncio
import os
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
os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"

import django  # noqa: E402

django.setup()

import torch  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import AsyncClient, Client  # noqa: E402

from apps.graphs import document  # noqa: E402
from apps.graphs.models import Tab  # noqa: E402
from apps.runs.models import Run  # noqa: E402
from apps.runs.store import get_store  # noqa: E402

REPEATS, CLIENTS, PER_CLIENT = 60, 30, 5


def graph() -> dict:
    return document.normalise({"nodes": [
        {"id": "start", "type": "Start"},
        {"id": "image", "type": "TensorCreate", "data": {"params": {"shape": "1,3,224,224", "fill": "randn"}}},
        {"id": "relu", "type": "Activation", "data": {"params": {"function": "relu"}}},
        {"id": "logits", "type": "TensorInput", "data": {"params": {"shape": "1,16", "value_mode": "random"}}},
        {"id": "softmax", "type": "Softmax"},
    ], "edges": [
        {"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "image"},
        {"id": "a", "source": "image", "sourceHandle": "tensor", "target": "relu", "targetHandle": "tensor"},
        {"id": "b", "source": "logits", "sourceHandle": "tensor", "target": "softmax", "targetHandle": "tensor"},
    ]})


def setup() -> tuple[Client, str, str]:
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench")
    tab = Tab.objects.create(owner=user, title="bench", document=graph())
    nodes = {n: {"status": "completed"} for n in ("start", "image", "relu", "logits", "softmax")}
    run = Run.objects.create(owner=user, status=Run.Status.SUCCEEDED, options={"record": True}, nodes=nodes)
    image, logits = torch.randn(1, 3, 224, 224), torch.randn(1, 16)
    store = get_store()
    for node, port, value in (("image", "tensor", image), ("relu", "tensor", image.relu()),
                              ("logits", "tensor", logits), ("softmax", "tensor", logits.softmax(-1))):
        store.put(str(run.pk), node, port, value)
    client = Client()
    client.force_login(user)
    return client, f"/editor/{tab.pk}/inspect/{{node}}/?run={run.pk}", str(run.pk)


def timed(client: Client, url: str) -> tuple[float, int]:
    started = time.perf_counter()
    response = client.get(url, HTTP_HX_REQUEST="true")
    elapsed = (time.perf_counter() - started) * 1e3
    assert response.status_code == 200, response.status_code
    return elapsed, len(response.content)


async def concurrent(client: Client, url: str) -> list[float]:
    """30 clients at once through Django's ASGI handler, as Daphne serves them."""
    latencies: list[float] = []

    async def one_client() -> None:
        own = AsyncClient()
        own.cookies = client.cookies
        for _ in range(PER_CLIENT):
            started = time.perf_counter()
            response = await own.get(url, HTTP_HX_REQUEST="true")
            assert response.status_code == 200
            latencies.append((time.perf_counter() - started) * 1e3)

    await asyncio.gather(*(one_client() for _ in range(CLIENTS)))
    return latencies


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[int(q * (len(values) - 1))]


def main() -> None:
    torch.set_num_threads(1)
    client, pattern, _ = setup()
    for node in ("relu", "softmax"):
        url = pattern.format(node=node)
        for _ in range(5):
            timed(client, url)  # warm up
        times, sizes = zip(*(timed(client, url) for _ in range(REPEATS)))
        print(f"{node:8s} fragment: median {statistics.median(times):.2f} ms, p95 {percentile(list(times), 0.95):.2f} ms, "
              f"{statistics.median(sizes) / 1024:.1f} KB")
    relu = pattern.format(node="relu")
    median_224 = statistics.median(timed(client, relu)[0] for _ in range(REPEATS))

    latencies = asyncio.run(concurrent(client, relu))
    print(f"{CLIENTS} concurrent clients x {PER_CLIENT} requests of the [1, 3, 224, 224] fragment through the "
          f"ASGI handler: median {statistics.median(latencies):.1f} ms, p95 {percentile(latencies, 0.95):.1f} ms")
    print(f"figure: inspector_224_fragment_median_ms = {median_224:.2f}")


if __name__ == "__main__":
    main()
