"""The server (codefyui/serve.py): Uvicorn as configured there, on a free loopback port with
a small ASGI application of the test's. A long answer goes as fast as its client reads it, a
form's body reaches the application as it came, a request's head is bounded in size and in
time, start-up raises the open files limit, and Ctrl+C while the server starts ends it and its
run workers quietly.
An upload through the product is tests/e2e/test_files.py's; what a big transfer costs the
others is bench/transfer_stall.py's."""
from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
import uvicorn

from codefyui import conf, serve
from codefyui.serve import MAX_HEAD_BYTES, OPEN_FILES, SOCKET_MESSAGE_BYTES, HttpProtocol, config, raise_open_files_limit
from tests.runs.worker_nodes import running

PIECE = 2**20
PIECES = 64
FORM = b'--b\r\nContent-Disposition: form-data; name="file"; filename="model.pt"\r\n\r\nweights\r\n--b--\r\n'


class App:
    """Answers ``GET /download`` with PIECES pieces of a MiB, noting how many it has sent, and
    any POST with the body it received, after noting it."""

    def __init__(self) -> None:
        self.sent = 0
        self.bodies: list[bytes] = []
        self.clients: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "websocket":   # accepts, then takes what comes until the socket closes
            await receive()
            await send({"type": "websocket.accept"})
            while (await receive())["type"] != "websocket.disconnect":
                pass
            return
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if scope["method"] == "POST":
            self.bodies.append(body)
            self.clients.append(scope["client"][0])
            await send({"type": "http.response.body", "body": body})
            return
        for i in range(PIECES):
            await send({"type": "http.response.body", "body": b"x" * PIECE, "more_body": i < PIECES - 1})
            self.sent += 1


@contextmanager
def serving(app: App) -> Iterator[int]:
    """The server of codefyui.serve's config in a thread; its port."""
    server = uvicorn.Server(config(app, port=0))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.01)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)


def whole_answer(client: socket.socket) -> bytes:
    """One answer of App's, to its last chunk."""
    answer = b""
    while not answer.endswith(b"0\r\n\r\n"):
        answer += client.recv(4096)
    return answer


def test_a_long_answers_next_piece_waits_until_the_client_has_read():
    """A slow laptop's download holds about a piece of it in the server's memory, not the
    whole file: the application's send waits while the client reads nothing."""
    app = App()
    with serving(app) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2**16)
        client.sendall(b"GET /download HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.5)
        assert 0 < app.sent < PIECES // 4    # held back by the unread connection
        received = 0
        while received < PIECES * PIECE:
            data = client.recv(2**20)
            assert data
            received += data.count(b"x")
        assert app.sent == PIECES            # every piece went once it was read


def test_a_forms_body_reaches_the_application_as_it_came():
    """The server parses no form: Django reads the body, as its upload limits say. A proxy's
    headers are the settings' to trust (CODEFYUI_HTTPS, CODEFYUI_TRUSTED_PROXIES), not the server's."""
    app = App()
    with serving(app) as port, socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(b"POST /files/upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                       b"X-Forwarded-For: 10.0.0.9\r\n"
                       b"Content-Length: %d\r\n\r\n" % len(FORM) + FORM)
        client.settimeout(10)
        answer = whole_answer(client)
    assert app.bodies == [FORM] and FORM in answer
    assert app.clients == ["127.0.0.1"]


def answer_to(port: int, request: bytes) -> bytes:
    """What the server answers ``request`` with, until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        try:
            client.sendall(request)
        except OSError:   # it stopped reading: its answer is waiting
            pass
        answer = b""
        while data := client.recv(65536):
            answer += data
    return answer


def test_a_request_whose_headers_pass_the_bound_is_refused_and_others_are_served():
    """httptools gathers a header however long it grows: one stranger's 190 MB header held as
    much memory and the event loop ~40 s. The head is bounded; a big body is not a head."""
    app = App()
    with serving(app) as port:
        huge = b"POST /x HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (4 * MAX_HEAD_BYTES) + b"\r\n\r\n"
        answer = answer_to(port, huge)
        assert answer.startswith(b"HTTP/1.1 431 ") and answer.endswith(b"The request's headers are too large.")
        body = b"b" * (4 * MAX_HEAD_BYTES)
        usual = (b"POST /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\nCookie: " + b"c" * 8000 +
                 b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        assert answer_to(port, usual).startswith(b"HTTP/1.1 200 ")
    assert app.bodies == [body]


def test_a_head_that_does_not_come_in_time_closes_its_connection(monkeypatch):
    """Connections that send nothing, or a byte now and then, would hold the server's
    descriptors for ever; a kept-alive connection may idle between its requests."""
    monkeypatch.setattr(serve, "HEAD_TIMEOUT_S", 0.3)
    app = App()
    with serving(app) as port:
        silent = socket.create_connection(("127.0.0.1", port), timeout=5)
        trickling = socket.create_connection(("127.0.0.1", port), timeout=5)
        trickling.sendall(b"GET /x HTTP/1.1\r\nHo")
        kept = socket.create_connection(("127.0.0.1", port), timeout=5)
        request = b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok"
        kept.sendall(request)
        assert whole_answer(kept).startswith(b"HTTP/1.1 200 ")
        time.sleep(0.8)
        assert silent.recv(10) == b"" and trickling.recv(10) == b""   # closed by the server
        kept.sendall(request)                                            # still open
        assert whole_answer(kept).startswith(b"HTTP/1.1 200 ")
        for client in (silent, trickling, kept):
            client.close()


def test_a_socket_message_past_the_bound_closes_that_socket():
    """A page sends nothing on its run socket; a script's 16 MB messages, queued 32 deep,
    would have held 512 MB of the server."""
    from websockets.exceptions import ConnectionClosedError
    from websockets.sync.client import connect

    with serving(App()) as port, connect(f"ws://127.0.0.1:{port}/ws/runs/x/") as socket_:
        socket_.send("a" * 1000)    # a small message is taken
        socket_.send("a" * (SOCKET_MESSAGE_BYTES + 1))
        with pytest.raises(ConnectionClosedError) as closed:
            socket_.recv(timeout=5)
    assert closed.value.rcvd.code == 1009   # "message too big"


def test_the_servers_options(monkeypatch):
    """httptools for HTTP, the WebSocket protocol of websockets, asyncio's loop, no lifespan
    messages (the application starts what it needs when imported), a proxy's headers left to
    the settings, idle connections kept as a browser or a script expects, a socket's messages
    kept small (a page sends none), a short grace at shutdown, and an access log only when
    asked for."""
    chosen = config()
    assert (chosen.app, chosen.http, chosen.ws, chosen.loop, chosen.lifespan) == (
        "codefyui.asgi:application", HttpProtocol, "websockets-sansio", "asyncio", "off")
    assert not chosen.proxy_headers and not chosen.access_log
    assert (chosen.timeout_keep_alive, chosen.timeout_graceful_shutdown, chosen.ws_max_size) == (75, 3, 65536)
    monkeypatch.setattr(conf, "ACCESS_LOG", True)
    assert config().access_log


def test_start_up_lets_the_server_hold_a_class_worth_of_connections(monkeypatch):
    """A shell or systemd starts a process with a soft limit of 1024 descriptors; the hard
    limit is the ceiling (and an unlimited soft limit is left alone)."""
    limits = {"now": (1024, 4096)}
    monkeypatch.setattr(resource, "getrlimit", lambda which: limits["now"])
    monkeypatch.setattr(resource, "setrlimit", lambda which, pair: limits.update(now=pair))
    assert raise_open_files_limit() == 4096 and limits["now"] == (4096, 4096)
    limits["now"] = (1024, resource.RLIM_INFINITY)
    assert raise_open_files_limit() == OPEN_FILES and limits["now"] == (OPEN_FILES, resource.RLIM_INFINITY)
    limits["now"] = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
    assert raise_open_files_limit() == resource.RLIM_INFINITY


def _run_workers(pid: int) -> list[int]:
    """The server's children that multiprocessing spawned (not its resource tracker)."""
    children = [c for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]
    return [int(c) for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


def _importing_torch(pid: int) -> bool:
    """Whether the process has begun to import torch (its library is mapped): seconds of work."""
    try:
        return "libtorch_cpu" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_ctrl_c_while_the_server_starts_ends_it_and_its_workers_without_a_traceback(tmp_path):
    """Ctrl+C in ``make run``'s terminal in its first seconds reaches its run workers while
    they import torch (a worker starts at a lower priority, so the server is up first): the
    server shuts down, the workers end, and none prints a traceback (a worker leaves its
    ending to the server from the first thing it runs)."""
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DATABASE_URL"}}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", CODEFYUI_VAR_DIR=str(tmp_path),
               CODEFYUI_RUN_WORKERS="2", CODEFYUI_MAX_CONCURRENT_RUNS="2",
               PYTHONPATH=str(Path(serve.__file__).parents[1]))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Started as from a terminal: Ctrl+C not ignored (a shell's background job, as CI may run
    # the tests, starts with it ignored, and every process started from there would inherit that).
    as_from_a_terminal = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                          f"os.execv(sys.executable, [sys.executable, '-m', 'codefyui.serve', '--port', '{port}'])")
    server = subprocess.Popen([sys.executable, "-c", as_from_a_terminal], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90   # within pytest-timeout's 120 s
        workers: list[int] = []
        while len(workers) < 2 or not all(map(_importing_torch, workers)):
            assert time.monotonic() < deadline and server.poll() is None, "the workers did not start"
            workers = _run_workers(server.pid)
            time.sleep(0.005)
        for worker in workers:   # held in their imports until the server is up (its own are shorter)
            os.kill(worker, signal.SIGSTOP)
        while not _listening(port):
            assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
            time.sleep(0.05)
        for worker in workers:
            os.kill(worker, signal.SIGCONT)
        time.sleep(0.3)   # back in the Python part of torch's import
        os.killpg(server.pid, signal.SIGINT)   # as the terminal sends it: to the whole group
        output = server.communicate(timeout=120)[0].decode()   # the workers hold the pipe too
        assert "Traceback" not in output, output
        for worker in workers:
            while running(worker):
                assert time.monotonic() < deadline, f"worker {worker} was left running"
                time.sleep(0.05)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
