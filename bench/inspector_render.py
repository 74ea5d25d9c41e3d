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
import threading
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
    print(f"{CLIENTS} concurrent clients x {PER_CLIENT} requests, in-process ASGI handler (clients share the "
          f"server's CPU): median {statistics.median(latencies):.1f} ms, p95 {percentile(latencies, 0.95):.1f} ms")
    latencies = served()
    print(f"{CLIENTS} concurrent clients x {PER_CLIENT} requests of the [1, 3, 224, 224] fragment from a Daphne "
          f"server: median {statistics.median(latencies):.1f} ms, p95 {percentile(latencies, 0.95):.1f} ms")
    print(f"figure: inspector_224_fragment_median_ms = {median_224:.2f}")


def served() -> list[float]:
    """The real path: Daphne in its own process runs the graph (captures live there), then
    30 client threads in this process ask for the Inspector fragment at once."""
    import http.client
    import json
    import socket
    import subprocess

    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from apps.runs.models import ApiToken

    user = get_user_model().objects.get(username="bench")
    tab = Tab.objects.get(owner=user)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DJANGO_ALLOWED_HOSTS": "127.0.0.1"}
    profile = ["-m", "cProfile", "-o", os.environ["BENCH_PROFILE"]] if os.environ.get("BENCH_PROFILE") else []
    server = subprocess.Popen([sys.executable, *profile, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                               "codefyui.asgi:application"], env=env, cwd=Path(__file__).resolve().parent.parent,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def request(method, path, body=None, headers=None):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            data = response.read()
            conn.close()
            return response.status, data

        for _ in range(100):  # wait for the server
            try:
                request("GET", "/login/")
                break
            except OSError:
                time.sleep(0.1)
        token = {"Authorization": f"Bearer {ApiToken.issue(user)}", "Content-Type": "application/json"}
        status, body = request("POST", "/api/runs", json.dumps({"graph": tab.document, "options": {"seed": 1}}), token)
        run_id = json.loads(body)["run_id"]
        while json.loads(request("GET", f"/api/runs/{run_id}", headers=token)[1])["status"] in ("queued", "running"):
            time.sleep(0.05)
        session = SessionStore()
        session.update({SESSION_KEY: str(user.pk), BACKEND_SESSION_KEY: "django.contrib.auth.backends.ModelBackend",
                        HASH_SESSION_KEY: user.get_session_auth_hash()})
        session.create()
        headers = {"Cookie": f"sessionid={session.session_key}", "HX-Request": "true"}
        path = f"/editor/{tab.pk}/inspect/relu/?run={run_id}"
        assert request("GET", path, headers=headers)[0] == 200
        one_by_one = []
        for _ in range(30):
            started = time.perf_counter()
            request("GET", path, headers=headers)
            one_by_one.append((time.perf_counter() - started) * 1e3)
        print(f"one client at a time from a Daphne server: median {statistics.median(one_by_one):.1f} ms")
        latencies: list[float] = []
        lock = threading.Lock()
        barrier = threading.Barrier(CLIENTS)

        def one_client() -> None:
            barrier.wait()
            for _ in range(PER_CLIENT):
                started = time.perf_counter()
                status, _ = request("GET", path, headers=headers)
                assert status == 200, status
                with lock:
                    latencies.append((time.perf_counter() - started) * 1e3)

        threads = [threading.Thread(target=one_client) for _ in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return latencies
    finally:
        server.send_signal(__import__("signal").SIGINT)  # lets a profiled server write its profile
        server.wait(20)


if __name__ == "__main__":
    main()
