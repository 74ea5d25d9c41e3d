"""One student's graph cannot stall the others: while student A's run computes for several
seconds (the digit lesson trained for --epochs) and student B's run goes past the memory cap (a
[9000, 9000] random tensor against CODEFYUI_RUN_MEMORY_MAX_MB=256), student C's tiny run
(examples/walkthrough.json) and C's page requests (the editor page) are timed, and compared
with the same run and page on the idle server.

Real server as in bench/class_burst.py (codefyui.serve on a free loopback port, its own var dir),
three run workers so each of the three students has one. Then, on a server with a 2-core
machine's default pool (two workers and two spares), A and B both start the long run and C's
tiny runs are timed again: once the long runs have held both workers for LONG_RUN_S, a
spare takes C's (before spares, C waited until a long run ended). Then four students, as many
as that pool's workers and spares, each run the digit lesson with 1000 epochs where 5 were
meant, and C's tiny run is timed once more (for at most FULL_POOL_WAIT_S): the run held
longest is paused for a stand-in worker, which starts (seconds: it imports torch) and takes
C's run (before stand-ins, C waited until one of the long runs ended, up to
CODEFYUI_RUN_TIMEOUT_S); two seconds later, the paused run having resumed, C runs again: the
idle stand-in is kept while the long runs fill the lanes, so that run does not wait for a
start (before, each such run waited seconds for a stand-in of its own).

Last, student A's script sends FLOOD requests at once (GET /api/graphs, each on its own
connection) and C asks for the editor page meanwhile: Django's one request thread is taken
in turns across senders (codefyui/handler.py), so C's page waits behind a few of A's
requests, not all of them.

Then A opens the Stats of four captures of 8 million values each (their summaries take tens
of milliseconds each) at once, and C asks for the editor page meanwhile: a read with heavy
tensor work ahead is served on a thread of its own (codefyui/heavy.py), so C's page does not
wait for A's summaries.

Goals (issue 11): the tiny run completes within 0.5 s of its time alone; page requests stay
within their usual time. Run: .venv/bin/python bench/isolation.py [--epochs N]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time

from class_burst import ROOT, Client, percentile, running, server_env, session_lines
from class_burst import accounts as class_accounts

TINY_RUNS, PAGES = 5, 20
FLOOD, FLOODS = 200, 5
BIG_SHAPE, BIG_PORTS, STATS_ROUNDS = "2,2000,2000", ("big", "relu", "sigmoid", "tanh"), 3


def edge(i: int, source: str, target: str, port: str = "tensor", target_port: str = "tensor") -> dict:
    return {"id": f"e{i}", "source": source, "sourceHandle": port, "target": target, "targetHandle": target_port}


def trigger(target: str) -> dict:
    return {"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": target}


def long_graph(epochs: int) -> dict:
    """The digit lesson (examples/train-digits.json) trained for ``epochs``: seconds of
    computing in little memory (a chain of MatMuls kept every product and met the cap)."""
    digits = json.loads((ROOT / "examples" / "train-digits.json").read_text())
    for node in digits["nodes"]:
        if node["type"] == "TrainingLoop":
            node["data"]["params"]["epochs"] = epochs
    return digits


def hog_graph() -> dict:
    return {"nodes": [{"id": "start", "type": "Start"},
                      {"id": "big", "type": "TensorCreate", "data": {"params": {"shape": "9000,9000", "fill": "randn"}}}],
            "edges": [trigger("big")]}


def big_captures_graph() -> dict:
    """A [2, 2000, 2000] random tensor and three activations of it: four captures of 8 M values."""
    nodes = [{"id": "start", "type": "Start"},
             {"id": "big", "type": "TensorCreate", "data": {"params": {"shape": BIG_SHAPE, "fill": "randn"}}}]
    edges = [trigger("big")]
    for i, name in enumerate(BIG_PORTS[1:]):
        nodes.append({"id": name, "type": "Activation", "data": {"params": {"function": name}}})
        edges.append(edge(i, "big", name))
    return {"nodes": nodes, "edges": edges}


def accounts(env: dict) -> tuple[list[str], str]:
    """Three students' API tokens, and a logged-in session of the third (C)."""
    script = ("from django.core.management import call_command\n"
              "from django.contrib.auth import get_user_model\n"
              "from apps.accounts.models import ApiToken\n"
              "call_command('migrate', interactive=False, verbosity=0)\n"
              "users = [get_user_model().objects.create_user(name) for name in ('a', 'b', 'c')]\n"
              "c = users[2]\n"
              + session_lines("c") + "print(' '.join(ApiToken.issue(u) for u in users), session.session_key)\n")
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    *tokens, session = done.stdout.split()[-4:]
    return tokens, session


async def page_times(port: int, session: str, pages: int = PAGES) -> list[float]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    times = []
    for _ in range(pages):
        started = time.perf_counter()
        writer.write(f"GET /editor/ HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: sessionid={session}\r\n\r\n".encode())
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        assert head[0].split()[1] == "200", head[0]
        length = next(int(h.split(":", 1)[1]) for h in head if h.lower().startswith("content-length:"))
        await reader.readexactly(length)
        times.append(time.perf_counter() - started)
    writer.close()
    return times


async def page_beside_flood(port: int, token: str, session: str) -> tuple[list[float], list[float]]:
    """C's editor page while A's FLOOD requests wait, FLOODS times: C's seconds, and how long
    each flood took to be answered."""
    page, flood = [], []
    for _ in range(FLOODS):
        clients = [await Client(port, token).open() for _ in range(FLOOD)]
        started = time.perf_counter()
        requests = asyncio.gather(*(c.call("GET", "/api/graphs") for c in clients))
        await asyncio.sleep(0.02)   # A's requests have arrived
        page += await page_times(port, session, 1)
        await requests
        flood.append(time.perf_counter() - started)
        for client in clients:
            client.close()
    return page, flood


async def page_beside_stats(port: int, token: str, session: str) -> tuple[list[float], list[float]]:
    """C's editor page while A opens the Stats of BIG_PORTS fresh captures at once, STATS_ROUNDS
    times (a new run of A's each round): C's seconds, and how long A's summaries took."""
    page, stats = [], []
    a = await Client(port, token).open()
    for _ in range(STATS_ROUNDS):
        _, run = await a.run(big_captures_graph(), {"record": True})
        assert run["status"] == "succeeded", run["error"]
        clients = [await Client(port, token).open() for _ in BIG_PORTS]
        started = time.perf_counter()
        requests = asyncio.gather(*(c.call("GET", f"/api/execution/outputs/{run['run_id']}/{node}/tensor/stats")
                                    for c, node in zip(clients, BIG_PORTS)))
        await asyncio.sleep(0.02)   # A's requests have arrived
        page += await page_times(port, session, 1)
        assert all(status == 200 for status, _ in await requests)
        stats.append(time.perf_counter() - started)
        for client in clients:
            client.close()
    a.close()
    return page, stats


async def tiny_times(port: int, token: str, doc: dict) -> list[float]:
    client = await Client(port, token).open()
    times = []
    for _ in range(TINY_RUNS):
        seconds, run = await client.run(doc, {})
        assert run["status"] == "succeeded", run["error"]
        times.append(seconds)
    client.close()
    return times


async def scenario(port: int, tokens: list[str], session: str, epochs: int) -> dict:
    walkthrough = json.loads((ROOT / "examples" / "walkthrough.json").read_text())
    await tiny_times(port, tokens[2], walkthrough)  # warm-up
    alone = {"tiny": await tiny_times(port, tokens[2], walkthrough), "page": await page_times(port, session)}
    a, b = await Client(port, tokens[0]).open(), await Client(port, tokens[1]).open()
    heavy = asyncio.ensure_future(a.run(long_graph(epochs), {"record": False}))
    await asyncio.sleep(0.5)  # A computes
    hog = asyncio.ensure_future(b.run(hog_graph(), {}))
    await asyncio.sleep(0.2)  # B grows towards the cap
    loaded = {"tiny": await tiny_times(port, tokens[2], walkthrough), "page": await page_times(port, session)}
    overlapped = not heavy.done()
    (heavy_s, heavy_run), (hog_s, hog_run) = await heavy, await hog
    a.close()
    b.close()
    return {"alone": alone, "loaded": loaded, "heavy": (heavy_s, heavy_run["status"], overlapped),
            "hog": (hog_s, f"{hog_run['status']}: {hog_run['error']}"),
            "flood": await page_beside_flood(port, tokens[0], session),
            "stats": await page_beside_stats(port, tokens[0], session)}


async def spare_scenario(port: int, tokens: list[str], epochs: int) -> tuple[list[float], bool]:
    """Students A and B each start a long run, which hold both of the pool's workers; C's tiny
    runs one after another (the first waits until a spare may take it)."""
    walkthrough = json.loads((ROOT / "examples" / "walkthrough.json").read_text())
    clients = [await Client(port, token).open() for token in tokens[:2]]
    heavy = [asyncio.ensure_future(c.run(long_graph(epochs), {"record": False})) for c in clients]
    await asyncio.sleep(0.5)  # both compute
    tiny = await tiny_times(port, tokens[2], walkthrough)
    overlapped = not any(h.done() for h in heavy)
    await asyncio.gather(*heavy)
    for client in clients:
        client.close()
    return tiny, overlapped


FULL_POOL_WAIT_S = 20


async def tiny_run_waited(client: Client, graph: dict) -> tuple[float, dict]:
    """Seconds until a walkthrough run ended (or FULL_POOL_WAIT_S passed), and the run then."""
    started = time.perf_counter()
    _, body = await client.call("POST", "/api/runs", json.dumps({"graph": graph}).encode())
    while True:
        _, run = await client.call("GET", f"/api/runs/{body['run_id']}?wait=5")
        waited = time.perf_counter() - started
        if run["status"] not in ("queued", "running") or waited > FULL_POOL_WAIT_S:
            return waited, run


async def full_pool_scenario(port: int, tokens: list[str]) -> list[tuple[float, dict]]:
    """Four students each start the digit lesson with 1000 epochs: every worker and spare holds
    a run of minutes. C's tiny run, then (once the run paused for it has resumed) C's next one:
    each (seconds until it ended or FULL_POOL_WAIT_S passed, the run then). The long runs are
    stopped at the end."""
    digits = long_graph(1000)
    walkthrough = json.loads((ROOT / "examples" / "walkthrough.json").read_text())
    long_runs = []
    for token in tokens[:4]:
        client = await Client(port, token).open()
        status, body = await client.call("POST", "/api/runs", json.dumps({"graph": digits}).encode())
        assert status == 202, body
        long_runs.append((client, body["run_id"]))
    await asyncio.sleep(3)   # past LONG_RUN_S: the spares have taken the third and fourth
    c = await Client(port, tokens[4]).open()
    first = await tiny_run_waited(c, walkthrough)
    await asyncio.sleep(2)   # nothing waits: the paused run resumes (workers.RESUME_QUIET_S)
    later = await tiny_run_waited(c, walkthrough)
    for client, run_id in long_runs:
        await client.call("POST", f"/api/runs/{run_id}/cancel")
        client.close()
    c.close()
    return [first, later]


def full_pool() -> list[tuple[float, dict]]:
    var, env = server_env("codefyui-full-pool-", CODEFYUI_RUN_WORKERS="2", CODEFYUI_MAX_CONCURRENT_RUNS="4")
    tokens = class_accounts(env, 5)
    with running(var, env, tokens[0]) as (_, port, _):
        return asyncio.run(full_pool_scenario(port, tokens))


def spares(epochs: int) -> tuple[list[float], bool]:
    """The scenario above on a server with two workers and two spares (a 2-core server's default)."""
    var, env = server_env("codefyui-spares-", CODEFYUI_RUN_WORKERS="2", CODEFYUI_MAX_CONCURRENT_RUNS="4")
    tokens, _ = accounts(env)
    with running(var, env, tokens[0]) as (_, port, _):
        return asyncio.run(spare_scenario(port, tokens, epochs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=60)
    args = parser.parse_args()
    var, env = server_env("codefyui-isolation-", CODEFYUI_RUN_WORKERS="3", CODEFYUI_MAX_CONCURRENT_RUNS="3",
                          CODEFYUI_RUN_MEMORY_MAX_MB="256")
    tokens, session = accounts(env)
    with running(var, env, tokens[0]) as (_, port, _):
        result = asyncio.run(scenario(port, tokens, session, args.epochs))
    alone, loaded = result["alone"], result["loaded"]
    tiny_alone, tiny_loaded = statistics.median(alone["tiny"]), statistics.median(loaded["tiny"])
    heavy_s, heavy_status, overlapped = result["heavy"]
    print(f"student A: the digit lesson, {args.epochs} epochs: {heavy_status} after {heavy_s:.1f} s "
          f"({'still computing' if overlapped else 'FINISHED'} when C's runs and pages were done)")
    print(f"student B: a [9000, 9000] random tensor past the 256 MB cap, after {result['hog'][0]:.2f} s: {result['hog'][1]}")
    print(f"student C's walkthrough run: alone median {tiny_alone:.3f} s; beside A and B median {tiny_loaded:.3f} s, "
          f"max {max(loaded['tiny']):.3f} s")
    for name, times in (("alone", alone["page"]), ("beside A and B", loaded["page"])):
        print(f"student C's editor page, {name}: median {statistics.median(times) * 1e3:.1f} ms, "
              f"p95 {percentile(times, 0.95) * 1e3:.1f} ms")
    page, flood = result["flood"]
    print(f"student C's editor page while A's script sends {FLOOD} requests at once: median "
          f"{statistics.median(page) * 1e3:.1f} ms, max {max(page) * 1e3:.1f} ms (A's {FLOOD} answered in "
          f"{statistics.median(flood) * 1e3:.0f} ms)")
    page, stats = result["stats"]
    print(f"student C's editor page while A opens the Stats of {len(BIG_PORTS)} captures of [{BIG_SHAPE}] at once: "
          f"median {statistics.median(page) * 1e3:.1f} ms, max {max(page) * 1e3:.1f} ms (A's summaries answered in "
          f"{statistics.median(stats) * 1e3:.0f} ms)")
    tiny, overlapped = spares(args.epochs)
    print(f"student C's walkthrough run while A and B each hold one of two workers with a long run "
          f"(two spares, {'both still computing' if overlapped else 'A or B FINISHED'} at the end): "
          f"median {statistics.median(tiny):.3f} s, max {max(tiny):.3f} s (the first waits until the long runs "
          "have held their workers long enough for a spare: workers.LONG_RUN_S)")
    for (waited, run), which in zip(full_pool(), ("", " again, two seconds later,")):
        ended = run["status"] not in ("queued", "running")
        print(f"student C's walkthrough run{which} while four students hold every worker and spare with the digit "
              f"lesson at 1000 epochs: {run['status']} after {waited:.1f} s"
              + ((" (the longest-held run was paused and a stand-in worker started for it)" if not which else
                  " (the longest-held run was paused again and the stand-in kept idle took it)") if ended else
                 f" (place {run['queue_place']} in the queue: it waits until one of the long runs ends)"))
    print(f"figure: isolation_tiny_run_extra_s = {max(loaded['tiny']) - tiny_alone:.3f}")


if __name__ == "__main__":
    main()
