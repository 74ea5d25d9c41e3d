"""Does one student's big upload hold up everyone else's requests? Against a real server
(Daphne on a free loopback port, as bench/class_burst.py starts it), one client posts a
multipart form with a large file (a model file a student uploads to their storage: the
body reaches the server before any view or login check), while another asks
``GET /api/health`` every 10 ms on its own connection. Prints the health requests' median
and slowest time during the upload, and the same without an upload beside it.

Before Daphne's requests left POST bodies unparsed, Twisted read every multipart body into
form fields with the email package on the event loop: a 64 MB upload held every request of
the server for ~2.7 s. Goal (issue 11): an upload costs others' requests nothing noticeable.
Run: .venv/bin/python bench/upload_stall.py [--mb N]
"""
from __future__ import annotations

import argparse
import asyncio
import signal
import statistics
import time

import class_burst as burst   # bench/, beside this script

BOUNDARY = "codefyui-bench-boundary"


async def upload(port: int, mb: int) -> float:
    """POST a multipart form carrying ``mb`` MB of file to the file-upload page (anonymous:
    Twisted parsed it all the same); the seconds until the answer is back."""
    head = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"model.pt\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    body = head + bytes(range(256)) * (mb * 2**20 // 256) + f"\r\n--{BOUNDARY}--\r\n".encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.perf_counter()
    writer.write(f"POST /files/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
                 f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\r\n".encode())
    writer.write(body)
    await writer.drain()
    await reader.readuntil(b"\r\n\r\n")
    seconds = time.perf_counter() - started
    writer.close()
    return seconds


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


async def measure(port: int, token: str, mb: int) -> tuple[list[float], list[float], float]:
    alone = await health_times(port, token, None)
    posting = asyncio.ensure_future(upload(port, mb))
    beside = await health_times(port, token, posting)
    return alone, beside, posting.result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64)
    args = parser.parse_args()
    var, env = burst.server_env("codefyui-upload-")
    token = burst.accounts(env, 1)[0]
    server, port = burst.start_server(var, env)
    try:
        asyncio.run(burst.healthy(port, token))
        alone, beside, upload_s = asyncio.run(measure(port, token, args.mb))
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(30)
    print(f"GET /api/health, one every 10 ms: alone median {statistics.median(alone) * 1e3:.1f} ms, "
          f"slowest {max(alone) * 1e3:.1f} ms")
    print(f"beside a {args.mb} MB multipart upload ({upload_s:.2f} s to its answer, {len(beside)} requests): "
          f"median {statistics.median(beside) * 1e3:.1f} ms, slowest {max(beside) * 1e3:.1f} ms")
    print(f"figure: upload_stall_slowest_request_ms = {max(beside) * 1e3:.1f}")


if __name__ == "__main__":
    main()
