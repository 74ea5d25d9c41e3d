"""Inspector render cost: server time and bytes of what a click on a node answers (the
editor's #editor partial, with the Inspector column on Forward) for a [1, 3, 224, 224]
output and for the walkthrough's Softmax, median and p95, then the same from a real server
with 30 concurrent clients.

The concurrent figure models a class: 30 students, each logged in in their own browser with
their own run and its editor page open, click a node at once, 5 times each, over kept-alive
connections (as htmx in a browser does). No student's view has been rendered before, so the
first request of each renders its value grids. The server runs in its own process; the
clients are one asyncio loop in this one, so they take little of the machine's CPU from the
server. (Until the Inspector column became part of the page, this bench timed a column-only
fragment that no click asked for; a click always re-rendered #editor.)

Goals (issue: Teaching Inspector): the [1, 3, 224, 224] fragment in <= 11 ms and <= 100 KB at
the median; 30 concurrent clients at p95 <= 250 ms.
Run: .venv/bin/python bench/inspector_render.py
"""
from __future__ import annotations

import asyncio
import gc
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
from django.test import Client  # noqa: E402

from apps.graphs import document  # noqa: E402
from apps.editor.models import Tab  # noqa: E402
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
    return client, f"/editor/{tab.pk}/?node={{node}}&view=forward&run={run.pk}", str(run.pk)


def timed(client: Client, url: str) -> tuple[float, int]:
    started = time.perf_counter()
    response = client.get(url, HTTP_HX_REQUEST="true")
    elapsed = (time.perf_counter() - started) * 1e3
    assert response.status_code == 200, response.status_code
    return elapsed, len(response.content)


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[int(q * (len(values) - 1))]


def main() -> None:
    torch.set_num_threads(1)
    client, pattern, _ = setup()
    medians = {}
    for node in ("relu", "softmax"):
        url = pattern.format(node=node)
        for _ in range(5):
            timed(client, url)  # warm up
        times, sizes = zip(*(timed(client, url) for _ in range(REPEATS)))
        medians[node] = statistics.median(times)
        print(f"{node:8s} fragment: median {medians[node]:.2f} ms, p95 {percentile(list(times), 0.95):.2f} ms, "
              f"{statistics.median(sizes) / 1024:.1f} KB")
    one_by_one, first, latencies = served()
    print(f"one client at a time from a real server: median {statistics.median(one_by_one):.1f} ms")
    print(f"{CLIENTS} concurrent clients x {PER_CLIENT} requests of the [1, 3, 224, 224] fragment from a real "
          f"server, each client its own student and run: median {statistics.median(latencies):.1f} ms, "
          f"p95 {percentile(latencies, 0.95):.1f} ms (first request of each: p95 {percentile(first, 0.95):.1f} ms)")
    print(f"figure: inspector_224_fragment_median_ms = {medians['relu']:.2f}")
    print(f"figure: inspector_30_clients_p95_ms = {percentile(latencies, 0.95):.1f}")


class KeptAlive:
    """One browser's connection: HTTP/1.1 requests one after another on one socket."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, cookie: str):
        self.reader, self.writer, self.cookie = reader, writer, cookie

    @classmethod
    async def open(cls, port: int, cookie: str) -> "KeptAlive":
        return cls(*await asyncio.open_connection("127.0.0.1", port), cookie)

    async def get(self, path: str) -> float:
        started = time.perf_counter()
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {self.cookie}\r\n"
                          f"HX-Request: true\r\n\r\n".encode())
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        assert head[0].split()[1] == "200", head[0]
        length = next(int(line.split(":", 1)[1]) for line in head if line.lower().startswith("content-length:"))
        await self.reader.readexactly(length)
        return (time.perf_counter() - started) * 1e3

    def close(self) -> None:
        self.writer.close()


def served() -> tuple[list[float], list[float], list[float]]:
    """The real path: the server (codefyui.serve) in its own process runs each student's graph
    (captures live there), then the students ask for the Inspector fragment."""
    import http.client
    import json
    import signal
    import socket
    import subprocess

    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from apps.accounts.models import ApiToken

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Every student's run stays inspectable: the store keeps as many runs as the class (and the lone client) has.
    env = {**os.environ, "DJANGO_ALLOWED_HOSTS": "127.0.0.1", "CODEFYUI_RUN_OUTPUT_STORE_MAX_RUNS": str(CLIENTS + 1)}
    profile = ["-m", "cProfile", "-o", os.environ["BENCH_PROFILE"]] if os.environ.get("BENCH_PROFILE") else []
    server = subprocess.Popen([sys.executable, *profile, "-m", "codefyui.serve", "--port", str(port)], env=env,
                              cwd=Path(__file__).resolve().parent.parent,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def request(method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        data = response.read()
        conn.close()
        return response.status, data

    def student(i: int) -> tuple[str, str]:
        """A student with a tab, a finished run of it and a logged-in browser: (fragment path, cookie)."""
        user = get_user_model().objects.create_user(f"student{i}")
        tab = Tab.objects.create(owner=user, title="lesson", document=graph())
        token = {"Authorization": f"Bearer {ApiToken.issue(user)}", "Content-Type": "application/json"}
        status, body = request("POST", "/api/runs", json.dumps({"graph": tab.document, "options": {"seed": i}}), token)
        assert status == 202, (status, body)
        run_id = json.loads(body)["run_id"]
        while json.loads(request("GET", f"/api/runs/{run_id}", headers=token)[1])["status"] in ("queued", "running"):
            time.sleep(0.05)
        session = SessionStore()
        session.update({SESSION_KEY: str(user.pk), BACKEND_SESSION_KEY: "django.contrib.auth.backends.ModelBackend",
                        HASH_SESSION_KEY: user.get_session_auth_hash()})
        session.create()
        cookie = f"sessionid={session.session_key}"
        status, _ = request("GET", f"/editor/{tab.pk}/?run={run_id}", headers={"Cookie": cookie})
        assert status == 200, status  # the editor the student has open before clicking a node
        return f"/editor/{tab.pk}/?node=relu&view=forward&run={run_id}", cookie

    async def one_by_one(path: str, cookie: str) -> list[float]:
        browser = await KeptAlive.open(port, cookie)
        await browser.get(path)  # warm up
        times = [await browser.get(path) for _ in range(30)]
        browser.close()
        return times

    async def class_at_once(students: list[tuple[str, str]]) -> tuple[list[float], list[float]]:
        browsers = [await KeptAlive.open(port, cookie) for _, cookie in students]
        first: list[float] = []
        latencies: list[float] = []

        async def ask(browser: KeptAlive, path: str) -> None:
            for i in range(PER_CLIENT):
                latencies.append(await browser.get(path))
                if i == 0:
                    first.append(latencies[-1])

        await asyncio.gather(*(ask(b, path) for b, (path, _) in zip(browsers, students)))
        for browser in browsers:
            browser.close()
        return first, latencies

    try:
        for _ in range(300):  # wait for the server
            try:
                request("GET", "/login/")
                break
            except OSError:
                time.sleep(0.1)
        students = [student(i) for i in range(CLIENTS + 1)]  # the last one is the lone client
        gc.collect()
        gc.freeze()  # the clients stand for browsers: this process's collector must not pause them
        lone = asyncio.run(one_by_one(*students.pop()))
        return (lone, *asyncio.run(class_at_once(students)))
    finally:
        server.send_signal(signal.SIGINT)  # lets a profiled server write its profile
        server.wait(30)


if __name__ == "__main__":
    main()
