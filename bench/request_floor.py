"""What one request costs the server process, by kind, against a real server (codefyui.serve
on a free loopback port, as bench/class_burst.py starts it): a student's client sends each kind
of request many times, one after another on one kept-alive connection, and the server's CPU
(utime + stime from /proc) is split between its event loop (Daphne and Twisted: parsing, the
ASGI hand-off, writing the answer) and its other threads (Django's one sync thread, the run
workers' readers).

It says where bench/class_burst.py's server CPU per run comes from: a run there is two
requests (POST /api/runs, then GET /api/runs/{id}?wait=30) and what its worker sends back.
``GET /api/health`` is the floor: no database row a run depends on, no run.
The last line is the CPU of the cheapest request, the floor every request pays.
Run: .venv/bin/python bench/request_floor.py [--requests N]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path

import class_burst as burst   # bench/, beside this script

MISSING_RUN = "/api/runs/00000000-0000-0000-0000-000000000000"


def threads_ms(pid: int) -> tuple[float, float]:
    """CPU milliseconds of the server's event loop (its main thread) and of its other threads."""
    every = {task.name: burst.ticks(task / "stat") for task in Path(f"/proc/{pid}/task").iterdir()}
    loop = every.pop(str(pid))
    return loop * 1000 / burst.TICK, sum(every.values()) * 1000 / burst.TICK


async def per_call(pid: int, times: int, call) -> tuple[float, float]:
    """The server's CPU (event loop, other threads) per ``await call()``, after a quiet moment."""
    await asyncio.sleep(0.3)
    before = threads_ms(pid)
    for _ in range(times):
        await call()
    after = threads_ms(pid)
    return (after[0] - before[0]) / times, (after[1] - before[1]) / times


async def measure(pid: int, port: int, token: str, count: int) -> list[tuple[str, float, float]]:
    cnn = json.loads((burst.ROOT / "examples" / "cnn.json").read_text())
    client = await burst.Client(port, token).open()
    _, finished = await client.run(cnn, {})
    kinds = [
        ("GET /api/health", "GET", "/api/health", b""),
        ("GET /api/runs/{id} (a finished run)", "GET", f"/api/runs/{finished['run_id']}", b""),
        ("GET /api/runs/{id} (no such run: 404)", "GET", MISSING_RUN, b""),
        ("POST /api/runs (a refused graph: 400)", "POST", "/api/runs", json.dumps({"graph": {"nodes": 3}}).encode()),
    ]

    async def cnn_run() -> None:
        _, run = await client.run(cnn, {})
        assert run["status"] == "succeeded", run["error"]

    rows = []
    for name, method, path, body in kinds:
        for _ in range(20):   # warm: each view imported, each query's first compile done
            await client.call(method, path, body)
        rows.append((name, *await per_call(pid, count, lambda: client.call(method, path, body))))
    rows.append(("a whole CNN run (POST, GET ?wait=30, its worker's results)",
                 *await per_call(pid, max(20, count // 4), cnn_run)))
    client.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args()
    var, env = burst.server_env("codefyui-floor-")
    token = burst.accounts(env, 1)[0]
    with burst.running(var, env, token) as (server, port, _):
        rows = asyncio.run(measure(server.pid, port, token, args.requests))
    print(f"server process CPU per request, {args.requests} of each one after another "
          f"({os.cpu_count()} cores); event loop = Daphne and Twisted, other = Django's thread and run readers")
    for name, loop, other in rows:
        print(f"{name:62s} {loop + other:5.2f} ms  (event loop {loop:4.2f} + other threads {other:4.2f})")
    print(f"figure: request_floor_ms = {min(loop + other for _, loop, other in rows[:-1]):.2f}")


if __name__ == "__main__":
    main()
