"""Does one student's big transfer hold up everyone else's requests? Against a real server
(codefyui.serve on a free loopback port, as bench/class_burst.py starts it), a student uploads a
64 MB file to My files (a multipart form), then downloads a 64 MB file of theirs, while another student asks
``GET /api/health`` every 10 ms on a connection of their own. Prints the health requests'
median and slowest time beside each transfer, and alone. Then a slow client (a laptop that
reads nothing for 2 s) asks for the same download: prints how much the server's memory grew
while it waited.

Before: under Daphne alone, Twisted read every multipart body into form fields with the
email package on the event loop (a 64 MB upload held every request for ~6.5 s), and Django
read a whole file into memory on its one request thread before sending it in 4 KiB pieces.
Daphne wrote a whole answer into Twisted's send buffer whatever the client read: a slow
client's 64 MB download took 64 MB of the server's memory. codefyui/serving.py makes Daphne
parse no form, hand a body over as it arrives and pause a long answer until its client
reads; codefyui/handler.py sends a file a MiB at a time from a thread of its own.
Goal (issue 11): a transfer costs others' requests nothing a class would notice, and a slow
client costs the server about a piece (1 MiB) of its download.
Run: .venv/bin/python bench/transfer_stall.py [--mb N]
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

import class_burst as burst   # bench/, beside this script

BOUNDARY = "codefyui-bench-boundary"
CSRF = "b" * 32   # the form's token matches the cookie's


def session_with_a_file(env: dict, mb: int) -> str:
    """A logged-in session of a new student who has a file of ``mb`` MB in My files: its key."""
    script = ("from django.contrib.auth import get_user_model\n"
              "from apps.runs import service\n"
              "user = get_user_model().objects.create(username='downloader')\n"
              "folder = service.user_files(user.pk).folder\n"
              "folder.mkdir(parents=True, exist_ok=True)\n"
              f"(folder / 'model.pt').write_bytes(bytes(range(256)) * {mb * 2**20 // 256})\n"
              + burst.session_lines("user") + "print(session.session_key)\n")
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=burst.ROOT, env=env,
                          capture_output=True, text=True, check=True)
    return done.stdout.split()[-1]


async def upload(port: int, session: str, mb: int) -> float:
    """Upload ``mb`` MB as a file of the student's (My files' form: multipart, with its CSRF
    token); the seconds until the answer is back."""
    head = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"csrfmiddlewaretoken\"\r\n\r\n{CSRF}\r\n"
            f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"upload.pt\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    body = head + bytes(range(256)) * (mb * 2**20 // 256) + f"\r\n--{BOUNDARY}--\r\n".encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.perf_counter()
    writer.write(f"POST /editor/files/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
                 f"Cookie: sessionid={session}; csrftoken={CSRF}\r\n"
                 f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\r\n".encode())
    writer.write(body)
    await writer.drain()
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    assert head.startswith("HTTP/1.1 302") and "location: /editor/files/" in head.lower(), head
    writer.close()
    return time.perf_counter() - started


async def download(port: int, session: str, mb: int) -> float:
    """GET the student's file; the seconds until its last byte is in."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.perf_counter()
    writer.write(f"GET /editor/files/model.pt/download HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 f"Cookie: sessionid={session}\r\nConnection: close\r\n\r\n".encode())
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    assert head.startswith("HTTP/1.1 200"), head
    received = len(await reader.read())
    writer.close()
    assert received >= mb * 2**20, received
    return time.perf_counter() - started


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) / 1024


async def slow_download(pid: int, port: int, session: str, mb: int) -> float:
    """The student's download to a client that reads nothing for 2 s, then all of it: how many
    MB the server's memory grew while it waited."""
    before = rss_mb(pid)
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**16)
    writer.transport.pause_reading()
    writer.write(f"GET /editor/files/model.pt/download HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 f"Cookie: sessionid={session}\r\nConnection: close\r\n\r\n".encode())
    await asyncio.sleep(2)
    grown = rss_mb(pid) - before
    writer.transport.resume_reading()
    received = len(await reader.read())
    writer.close()
    assert received >= mb * 2**20, received
    return grown


async def health_times(port: int, token: str, until: asyncio.Future | None, count: int = 100) -> list[float]:
    """Seconds of each ``GET /api/health``, one every 10 ms, until ``until`` is done (or ``count``)."""
    client = await burst.Client(port, token).open()
    times: list[float] = []
    while (until is None and len(times) < count) or (until is not None and not until.done()):
        started = time.perf_counter()
        status, _ = await client.call("GET", "/api/health")
        assert status == 200, status
        times.append(time.perf_counter() - started)
        await asyncio.sleep(0.01)
    client.close()
    return times


async def beside(port: int, token: str, transfer) -> tuple[list[float], float]:
    going = asyncio.ensure_future(transfer)
    times = await health_times(port, token, going)
    return times, going.result()


async def measure(port: int, token: str, session: str, mb: int) -> dict[str, tuple[list[float], float]]:
    return {"alone": (await health_times(port, token, None), 0.0),
            f"beside a {mb} MB upload": await beside(port, token, upload(port, session, mb)),
            f"beside a {mb} MB download": await beside(port, token, download(port, session, mb))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64)
    args = parser.parse_args()
    var, env = burst.server_env("codefyui-transfer-")
    token = burst.accounts(env, 1)[0]
    session = session_with_a_file(env, args.mb)
    with burst.running(var, env, token) as (server, port, _):
        rows = asyncio.run(measure(port, token, session, args.mb))
        grown = asyncio.run(slow_download(server.pid, port, session, args.mb))
    print("GET /api/health, one every 10 ms:")
    for name, (times, seconds) in rows.items():
        took = f" ({seconds:.2f} s to its end)" if seconds else ""
        print(f"  {name}{took}: {len(times)} requests, median {statistics.median(times) * 1e3:.1f} ms, "
              f"slowest {max(times) * 1e3:.1f} ms")
    print(f"a {args.mb} MB download to a client that reads nothing for 2 s: the server's memory grew {grown:.1f} MB")
    print(f"figure: transfer_stall_slowest_request_ms = {max(max(t) for t, _ in list(rows.values())[1:]) * 1e3:.1f}")


if __name__ == "__main__":
    main()
