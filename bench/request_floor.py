"""What one request costs the server process, by kind, against a real server (Daphne on a
free loopback port, as bench/class_burst.py starts it): a student's client sends each kind
of request many times, one after another on one kept-alive connection, and the server's CPU
(utime + stime from /proc) is split between its event loop (Daphne and Twisted: parsing,
the ASGI hand-off, writing the answer) and its other threads (Django's one sync thread, the
run workers' readers).

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
import signal
import tempfile
from pathlib import Path

import class_burst as burst   # bench/, beside this script

ROOT = Path(__file__).resolve().parent.parent
MISSING_RUN = "/api/runs/00000000-0000-0000-0000-000000000000"


def threads_ms(pid: int) -> tuple[float, float]:
    """CPU milliseconds of the server's event loop (its main thread) and of its other threads."""
    loop = other = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # a thread that ended meanwhile
            continue
        ticks = int(fields[11]) + int(fields[12])
        if task.name == str(pid):
            loop += ticks
        else:
            other += ticks
    return loop * 1000 / burst.TICK, other * 1000 / burst.TICK


async def measure(pid: int, port: int, token: str, count: int) -> list[tuple[str, float, float]]:
    cnn = json.loads((ROOT / "examples" / "cnn.json").read_text())
    client = await burst.Client(port, token).open()
    _, finished = await client.run(cnn, {})
    kinds = [
        ("GET /api/health", "GET", "/api/health", b""),
        ("GET /api/runs/{id} (a finished run)", "GET", f"/api/runs/{finished['run_id']}", b""),
        ("GET /api/runs/{id} (no such run: 404)", "GET", MISSING_RUN, b""),
        ("POST /api/runs (a refused graph: 400)", "POST", "/api/runs", json.dumps({"graph": {"nodes": 3}}).encode()),
    ]
    rows = []
    for name, method, path, body in kinds:
        for _ in range(20):   # warm: each view imported, each query's first compile done
            await client.call(method, path, body)
        await asyncio.sleep(0.3)
        before = threads_ms(pid)
        for _ in range(count):
            await client.call(method, path, body)
        after = threads_ms(pid)
        rows.append((name, (after[0] - before[0]) / count, (after[1] - before[1]) / count))
    runs = max(20, count // 4)
    await asyncio.sleep(0.3)
    before = threads_ms(pid)
    for _ in range(runs):
        _, run = await client.run(cnn, {})
        assert run["status"] == "succeeded", run["error"]
    after = threads_ms(pid)
    rows.append(("a whole CNN run (POST, GET ?wait=30, its worker's results)",
                 (after[0] - before[0]) / runs, (after[1] - before[1]) / runs))
    client.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args()
    var = Path(tempfile.mkdtemp(prefix="codefyui-floor-"))
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DJANGO_DEBUG"}}
    env.update(DATABASE_URL=f"sqlite:///{var / 'bench.sqlite3'}", CODEFYUI_VAR_DIR=str(var),
               DJANGO_SETTINGS_MODULE="codefyui.settings", DJANGO_ALLOWED_HOSTS="127.0.0.1",
               PYTHONPATH=str(ROOT))
    token = burst.accounts(env, 1)[0]
    server, port = burst.start_server(var, env)
    try:
        asyncio.run(burst.healthy(port, token))
        rows = asyncio.run(measure(server.pid, port, token, args.requests))
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(30)
    print(f"server process CPU per request, {args.requests} of each one after another "
          f"({os.cpu_count()} cores); event loop = Daphne and Twisted, other = Django's thread and run readers")
    for name, loop, other in rows:
        print(f"{name:62s} {loop + other:5.2f} ms  (event loop {loop:4.2f} + other threads {other:4.2f})")
    print(f"figure: request_floor_ms = {min(loop + other for _, loop, other in rows[:-1]):.2f}")


if __name__ == "__main__":
    main()
