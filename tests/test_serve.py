"""The server (codefyui/serve.py, codefyui/serving.py): Daphne started as ``make run`` starts it
(``python -m codefyui.serve``), on a free loopback port, serving ``app`` below (or the
product's Django handler, ``handler``, where the answer is the handler's). What serving.py adds
to Daphne, each against such a server: no form parsing, a body handed over as it arrives and
its socket paused while the application is behind, a 413 before a too large body is read and a
507 when the disk is full, a long answer paced by its client, a request's head bounded in size
and in time, idle connections kept, socket messages bounded, the open-files limit raised; and
Ctrl+C while the server starts ends it and its run workers quietly. The tests order things by
what the server says (its output lines, its answers), never by sleeping.
An upload through the product is tests/e2e/test_files.py's; what a big transfer costs the
others is bench/transfer_stall.py's."""
from __future__ import annotations

import asyncio
import base64
import os
import queue
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PIECE = 2**20
PIECES = 64
FORM = b'--b\r\nContent-Disposition: form-data; name="file"; filename="model.pt"\r\n\r\nweights\r\n--b--\r\n'
QUICK_HEAD_S, QUICK_KEEP_ALIVE_S = 0.5, 2.0   # the timeouts of the server ``quick`` starts

if os.environ.get("TEST_SERVE_QUICK"):   # in the server ``quick`` starts: its timeouts short
    from codefyui import serving
    serving.HEAD_TIMEOUT_S, serving.KEEP_ALIVE_S = QUICK_HEAD_S, QUICK_KEEP_ALIVE_S


def say(line: str) -> None:
    """A line on the server's output, for the test that waits for it."""
    print(line, flush=True)


class App:
    """The application of the servers this module starts (``--app tests.test_serve:app``).
    ``GET /download``: PIECES pieces of a MiB, saying "held after N" the first time a piece's
    send waits for the client, and "sent all" at the end. ``POST /hold``: takes the body's
    first message, says "holding", and takes the rest once ``GET /release`` came. Another
    POST: says "body so far N" after each message, and answers "N bytes" (``/echo``: the
    body), with the sizes of the messages it came in (x-sizes) and its client's address. A
    WebSocket: accepted, says "message N" for each."""

    def __init__(self) -> None:
        self.released = asyncio.Event()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.accept"})
            while (message := await receive())["type"] != "websocket.disconnect":
                say(f"message {len(message.get('text') or message.get('bytes') or '')}")
            return
        sizes, echoed = [], b""
        while True:
            if scope["path"] == "/hold" and len(sizes) == 1:
                say("holding")
                await self.released.wait()
            message = await receive()
            sizes.append(len(message.get("body", b"")))
            echoed += message.get("body", b"") if scope["path"] == "/echo" else b""
            if scope["method"] == "POST" and scope["path"] != "/hold":
                say(f"body so far {sum(sizes)}")
            if not message.get("more_body"):
                break
        if scope["path"] == "/release":
            self.released.set()
        headers = [(b"x-sizes", ",".join(map(str, sizes)).encode()), (b"x-client", scope["client"][0].encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if scope["path"] != "/download":
            body = echoed if scope["path"] == "/echo" else b"%d bytes" % sum(sizes)
            await send({"type": "http.response.body", "body": body})
            return
        held = False
        for i in range(PIECES):
            sending = asyncio.ensure_future(
                send({"type": "http.response.body", "body": b"x" * PIECE, "more_body": i < PIECES - 1}))
            await asyncio.sleep(0)   # the send runs until it first waits, if it does
            if not sending.done() and not held:
                say(f"held after {i}")
                held = True
            await sending
        say("sent all")


app = App()


def __getattr__(name: str):
    """``handler``: the product's Django handler, made when a server imports it."""
    if name != "handler":
        raise AttributeError(name)
    import django
    django.setup(set_prefix=False)
    from codefyui.handler import SyncStackASGIHandler
    return SyncStackASGIHandler()


class Served:
    """A server started as ``make run`` starts it, on a port of its choosing; its output is
    read line by line as it comes (``wait_for``). ``before``: Python run first in its process
    (a limit, a signal's disposition), as a shell or a terminal would have set it."""

    def __init__(self, tmp: Path, application: str = "tests.test_serve:app", before: str = "", **env: str) -> None:
        environment = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DATABASE_URL"}}
        environment.update(DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}", CODEFYUI_VAR_DIR=str(tmp), PYTHONPATH=str(ROOT),
                           DJANGO_SETTINGS_MODULE="codefyui.settings", PYTHONUNBUFFERED="1", **env)
        server = [sys.executable, "-m", "codefyui.serve", "--port", "0", "--app", application]
        start = f"import os, sys\n{before}\nos.execv(sys.executable, {server!r})"
        self.process = subprocess.Popen([sys.executable, "-c", start], cwd=ROOT, env=environment,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        self.output: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._port: int | None = None

    def _read(self) -> None:
        for line in self.process.stdout:
            self._lines.put(line.decode(errors="replace"))
        self._lines.put(None)

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match:
        """The next line of the server's output that matches ``pattern``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {pattern!r} from the server:\n{''.join(self.output)}") from None
            if line is None:
                raise AssertionError(f"the server ended before {pattern!r}:\n{''.join(self.output)}")
            self.output.append(line)
            if found := re.search(pattern, line):
                return found

    def ended(self, timeout: float = 90) -> str:
        """All it wrote, once it and every process that shares its output have ended."""
        deadline = time.monotonic() + timeout
        while (line := self._lines.get(timeout=max(0.0, deadline - time.monotonic()))) is not None:
            self.output.append(line)
        return "".join(self.output)

    @property
    def port(self) -> int:
        if self._port is None:
            self._port = int(self.wait_for(r"Listening on TCP address 127\.0\.0\.1:(\d+)")[1])
        return self._port

    def connect(self, timeout: float = 10) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A server of ``app``, started with a shell's 1024 descriptors."""
    server = Served(tmp_path_factory.mktemp("served"), before="import resource; resource.setrlimit("
                    "resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))")
    server.port
    yield server
    server.stop()


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """A server of ``app`` whose head timeout and keep-alive are short (TEST_SERVE_QUICK)."""
    server = Served(tmp_path_factory.mktemp("quick"), TEST_SERVE_QUICK="1")
    server.port
    yield server
    server.stop()


DISK_BYTES = 4 * 2**20


@pytest.fixture(scope="module")
def handled(tmp_path_factory):
    """A server of the product's Django handler whose disk takes no file past DISK_BYTES
    (RLIMIT_FSIZE: a write past it fails as on a full disk; Python ignores SIGXFSZ)."""
    server = Served(tmp_path_factory.mktemp("handled"), "tests.test_serve:handler",
                    before=f"import resource; resource.setrlimit(resource.RLIMIT_FSIZE, ({DISK_BYTES}, {DISK_BYTES}))")
    server.port
    yield server
    server.stop()


def read_answer(client: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One answer: its status, headers (names in lower case) and body (chunks joined)."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = client.recv(65536)
        assert more, f"the connection closed after {data!r}"
        data += more
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, value in (line.split(":", 1) for line in lines[1:])}
    if "content-length" in headers:
        while len(rest) < int(headers["content-length"]):
            rest += client.recv(65536)
        return int(lines[0].split()[1]), headers, rest
    body = b""
    while True:   # chunked
        while b"\r\n" not in rest:
            rest += client.recv(65536)
        size, rest = rest.split(b"\r\n", 1)
        while len(rest) < int(size, 16) + 2:
            rest += client.recv(65536)
        if int(size, 16) == 0:
            return int(lines[0].split()[1]), headers, body
        body, rest = body + rest[:int(size, 16)], rest[int(size, 16) + 2:]


def test_a_forms_body_reaches_the_application_as_it_came(served):
    """Twisted parsed a POST form on the event loop into fields Daphne never read (a 64 MB
    upload held every request ~6.5 s), and answered 400 to one it could not parse: the body is
    Django's to read, as its upload limits say. A proxy's headers are the settings' to trust
    (CODEFYUI_HTTPS, CODEFYUI_TRUSTED_PROXIES), not the server's."""
    with served.connect() as client:
        for content_type in (b"multipart/form-data; boundary=b", b"multipart/form-data"):   # no boundary: not a form
            client.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nX-Forwarded-For: 10.0.0.9\r\n"
                           b"Content-Length: %d\r\n\r\n%s" % (content_type, len(FORM), FORM))
            status, headers, body = read_answer(client)
            assert (status, body, headers["x-client"]) == (200, FORM, "127.0.0.1")


def test_a_body_reaches_the_application_as_it_arrives(served):
    """Daphne started the application once Twisted had the whole body (in a temp file): a
    big one reaches it piece by piece as it comes, so the handler can refuse it or spool it
    as it arrives."""
    first, rest = b"a" * 100_000, b"b" * 900_000
    with served.connect() as client:
        client.sendall(b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (len(first) + len(rest)) + first)
        served.wait_for(rf"body so far {len(first)}$")   # before the rest is sent
        client.sendall(rest)
        status, headers, body = read_answer(client)
    assert (status, body) == (200, b"%d bytes" % (len(first) + len(rest)))
    assert len(headers["x-sizes"].split(",")) >= 2


def test_a_body_the_application_does_not_take_pauses_its_socket(served):
    """The server holds about a piece (BODY_PIECE) of a body the application has not taken:
    then it reads no more, and the client can send no more than the sockets' buffers take."""
    total, sent = 96 * PIECE, 0
    with served.connect() as client, served.connect() as other:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 2**18)
        client.sendall(b"POST /hold HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % total)
        client.setblocking(False)
        piece = b"h" * PIECE
        while sent < total and select.select([], [client], [], 1.0)[1]:   # until it can send no more for a second
            try:
                sent += client.send(piece[:total - sent])
            except BlockingIOError:
                pass
        served.wait_for("holding")
        assert sent < total // 2, sent   # not the whole body: the server stopped reading it
        other.sendall(b"GET /release HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_answer(other)[0] == 200
        client.setblocking(True)
        client.settimeout(30)
        client.sendall(b"h" * (total - sent))
        status, headers, body = read_answer(client)
    assert (status, body) == (200, b"%d bytes" % total)
    sizes = [int(size) for size in headers["x-sizes"].split(",")]
    assert max(sizes) <= 2**20 + 2**16   # what it held once the application was behind: about a piece


def test_a_long_answers_next_piece_waits_until_the_client_has_read(served):
    """Daphne wrote every piece of an answer into Twisted's send buffer at once: a slow
    laptop's download sat whole in the server's memory. The application's send now waits
    while the client reads nothing, and every piece goes once it reads."""
    with served.connect() as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2**16)
        client.sendall(b"GET /download HTTP/1.1\r\nHost: x\r\n\r\n")
        held = int(served.wait_for(r"held after (\d+)")[1])
        assert held < PIECES // 4
        received, data = 0, b""
        while not data.endswith(b"0\r\n\r\n"):
            data = client.recv(2**20)
            assert data
            received += data.count(b"x")
        assert received == PIECES * PIECE
        served.wait_for("sent all")


def test_a_body_too_large_for_the_server_is_refused_before_it_is_read(handled):
    """The handler refuses a body past ``max_body_bytes`` from its declared length: under
    Daphne alone that answer waited for the whole body. The connection then closes: what
    the client still sends is dropped."""
    from codefyui.handler import body_too_large, max_body_bytes

    with handled.connect(timeout=30) as client:
        client.sendall(b"POST /editor/files/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; "
                       b"boundary=b\r\nContent-Length: %d\r\n\r\n" % (max_body_bytes() + 1) + b"x" * 2**20)
        status, headers, body = read_answer(client)
        assert (status, body.decode(), headers["connection"]) == (413, body_too_large(), "close")
        client.sendall(b"x" * 2**20)   # dropped, not taken for a next request
        assert client.recv(65536) == b""


def test_a_body_the_disk_cannot_take_is_answered_507(handled):
    """The handler spools a big body to disk as it arrives; a full disk there is a 507 with a
    plain sentence, and the server goes on."""
    body = b"d" * (2 * DISK_BYTES)
    with handled.connect(timeout=30) as client:
        head = b"POST /editor/files/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" % len(body)
        sending = threading.Thread(target=lambda: _send_quietly(client, head + body), daemon=True)
        sending.start()
        status, _, answer = read_answer(client)
        sending.join(30)
    assert (status, answer) == (507, b"The server could not store the request's body.")
    with handled.connect(timeout=30) as client:
        client.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert read_answer(client)[0] == 401   # Django's answer: the API asks for a token


def _send_quietly(client: socket.socket, data: bytes) -> None:
    try:
        client.sendall(data)
    except OSError:   # the server closed the connection after its answer
        pass


def answer_to(port: int, request: bytes) -> bytes:
    """What the server answers ``request`` with, until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        _send_quietly(client, request)
        answer = b""
        while data := client.recv(65536):
            answer += data
    return answer


def test_a_request_whose_headers_pass_the_bound_is_refused_and_others_are_served(served):
    """A request's head is bounded (64 KB, 431) where Twisted cut a line at 16 KB with a bare
    400; a big body is not a head."""
    from codefyui.serving import MAX_HEAD_BYTES

    huge = b"POST /x HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (4 * MAX_HEAD_BYTES) + b"\r\n\r\n"
    answer = answer_to(served.port, huge)
    assert answer.startswith(b"HTTP/1.1 431 ") and answer.endswith(b"The request's headers are too large.")
    many = b"GET /x HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"m" * 1000) for i in range(80)) + b"\r\n"
    assert answer_to(served.port, many).startswith(b"HTTP/1.1 431 ")   # lines within the bound, too many of them
    body = b"b" * (4 * MAX_HEAD_BYTES)
    with served.connect() as client:
        client.sendall(b"POST /x HTTP/1.1\r\nHost: x\r\nCookie: " + b"c" * 30_000 +
                       b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        assert read_answer(client)[::2] == (200, b"%d bytes" % len(body))


def test_a_head_that_does_not_come_in_time_closes_its_connection_and_an_idle_one_is_kept(quick):
    """Connections that send nothing, or a byte now and then (which restarts Twisted's idle
    timeout), would hold the server's descriptors for ever; a kept-alive connection idles
    between its requests for longer than that, until KEEP_ALIVE_S (75 s in the product)."""
    request = b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok"
    with quick.connect() as kept, quick.connect() as silent, quick.connect(timeout=0.1) as trickling:
        kept.sendall(request)
        assert read_answer(kept)[0] == 200
        trickling.sendall(b"GET /x HTTP/1.1\r\n")
        opened = time.monotonic()
        while True:   # a byte a tenth of a second, until the server closes
            try:
                if trickling.recv(10) == b"":
                    break
            except socket.timeout:
                trickling.sendall(b"X")
            assert time.monotonic() - opened < QUICK_KEEP_ALIVE_S, "the trickling connection was kept"
        assert silent.recv(10) == b""   # closed by the server
        kept.sendall(request)           # still open: it idled longer than a head may take
        assert read_answer(kept)[0] == 200
        answered = time.monotonic()
        kept.settimeout(QUICK_KEEP_ALIVE_S + 10)
        assert kept.recv(10) == b""     # closed once idle for the keep-alive
        assert time.monotonic() - answered > QUICK_KEEP_ALIVE_S - 0.1


def websocket(port: int, path: str = "/ws/runs/x/") -> socket.socket:
    """A WebSocket opened by hand (its handshake, its answer 101)."""
    client = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16))
    client.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   b"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path.encode(), key))
    head = b""
    while b"\r\n\r\n" not in head:
        head += client.recv(1)
    assert head.startswith(b"HTTP/1.1 101 "), head
    return client


def text_frame(payload: bytes) -> bytes:
    """A client's masked text frame."""
    mask = os.urandom(4)
    length = (bytes([0x80 | len(payload)]) if len(payload) < 126 else
              struct.pack("!BH", 0x80 | 126, len(payload)) if len(payload) < 2**16 else
              struct.pack("!BQ", 0x80 | 127, len(payload)))
    return b"\x81" + length + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def test_a_socket_message_past_the_bound_closes_that_socket(served):
    """A page sends nothing on its run socket; Daphne's 1 MB messages would let a script hold
    that much of the server a socket. Past the bound the socket is dropped (Autobahn's
    failByDrop, Daphne's choice: no closing handshake with such a client)."""
    from codefyui.serving import SOCKET_MESSAGE_BYTES

    with websocket(served.port) as client:
        client.sendall(text_frame(b"a" * SOCKET_MESSAGE_BYTES))   # a message within the bound is taken
        served.wait_for(f"message {SOCKET_MESSAGE_BYTES}$")
        _send_quietly(client, text_frame(b"a" * (SOCKET_MESSAGE_BYTES + 1)))
        try:
            while client.recv(65536):   # until the server ends the connection
                pass
        except ConnectionResetError:
            pass
    with websocket(served.port) as other:   # the server goes on
        other.sendall(text_frame(b"b" * 10))
        served.wait_for("message 10$")


def test_start_up_lets_the_server_hold_a_class_worth_of_connections(served):
    """A shell or systemd starts a process with a soft limit of 1024 descriptors (``served``
    was): the server raised it to OPEN_FILES, or to the hard limit below that."""
    from codefyui.serving import OPEN_FILES

    limits = Path(f"/proc/{served.process.pid}/limits").read_text()
    soft, hard = re.search(r"Max open files\s+(\d+)\s+(\d+|unlimited)", limits).groups()
    assert int(soft) == (OPEN_FILES if hard == "unlimited" else min(OPEN_FILES, int(hard)))


def test_the_servers_options(monkeypatch):
    """Bodies handed over in MiB pieces, socket messages and frames bounded, idle
    connections kept 75 s, and an access log only when asked for (a line a request is CPU in
    a class's burst of runs)."""
    from codefyui import conf, serving

    chosen = serving.Server(app, "127.0.0.1", 0)
    assert chosen.endpoints == ["tcp:port=0:interface=127.0.0.1"] and chosen.request_buffer_size == 2**20
    assert chosen.websocket_max_message_size == chosen.websocket_max_frame_size == 65536
    assert chosen.action_logger is None and serving.HTTPFactory(chosen).timeOut == 75
    monkeypatch.setattr(conf, "ACCESS_LOG", True)
    assert serving.Server(app).action_logger is not None


def _run_workers(pid: int) -> list[int]:
    """The server's children that import torch for its run workers: the workers multiprocessing
    spawned (not its resource tracker), or the forkserver they are forked from
    (apps/runs/worker_start.py, where the workers start so)."""
    children = [c for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]
    return [int(c) for c in children if re.search(rb"spawn_main|worker_start", Path(f"/proc/{c}/cmdline").read_bytes())]


def _all_started(workers: list[int]) -> bool:
    """Both workers (CODEFYUI_RUN_WORKERS=2), or their forkserver, import torch."""
    forkserver = any(b"worker_start" in Path(f"/proc/{w}/cmdline").read_bytes() for w in workers)
    return len(workers) >= (1 if forkserver else 2) and all(map(_importing_torch, workers))


def _importing_torch(pid: int) -> bool:
    """Whether the process has begun to import torch (its library is mapped): seconds of work."""
    try:
        return "libtorch_cpu" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _cpu_ticks(pid: int) -> int:
    """The process's CPU time so far (utime + stime), in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_ctrl_c_while_the_server_starts_ends_it_and_its_workers_without_a_traceback(tmp_path):
    """Ctrl+C in ``make run``'s terminal in its first seconds reaches its run workers while
    they import torch (a worker starts at a lower priority, so the server is up first): the
    server shuts down, the workers end, and none prints a traceback (a worker leaves its
    ending to the server from the first thing it runs)."""
    from tests.runs.worker_nodes import running

    # Started as from a terminal: Ctrl+C not ignored (a shell's background job, as CI may run
    # the tests, starts with it ignored, and every process started from there would inherit that).
    server = Served(tmp_path, "codefyui.asgi:application", before="import signal; signal.signal(signal.SIGINT, "
                    "signal.SIG_DFL)", CODEFYUI_RUN_WORKERS="2", CODEFYUI_MAX_CONCURRENT_RUNS="2")
    try:
        deadline = time.monotonic() + 90   # within pytest-timeout's 120 s
        workers: list[int] = []
        while not _all_started(workers):   # until both import torch
            assert time.monotonic() < deadline and server.process.poll() is None, "the workers did not start"
            workers = _run_workers(server.process.pid)
            time.sleep(0.005)
        for worker in workers:   # held in their imports until the server is up (its own are shorter)
            os.kill(worker, signal.SIGSTOP)
        server.port   # it says it listens
        ticks = {worker: _cpu_ticks(worker) for worker in workers}
        for worker in workers:
            os.kill(worker, signal.SIGCONT)
        while not all(_cpu_ticks(worker) > ticks[worker] + 1 for worker in workers):   # until both import again
            assert time.monotonic() < deadline, "the workers did not go on"
            time.sleep(0.005)
        os.killpg(server.process.pid, signal.SIGINT)   # as the terminal sends it: to the whole group
        output = server.ended()   # the workers hold its output too
        assert "Traceback" not in output, output
        for worker in workers:
            while running(worker):   # until it has ended
                assert time.monotonic() < deadline, f"worker {worker} was left running"
                time.sleep(0.05)
    finally:
        if server.process.poll() is None:
            os.killpg(server.process.pid, signal.SIGKILL)
