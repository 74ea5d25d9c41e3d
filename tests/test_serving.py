"""How Daphne takes in requests (codefyui/serving.py): Twisted leaves a form's body to Django,
bodies come in 1 MiB pieces, no access line of Twisted's is made, and a long answer is written
as fast as its client reads it. An upload through the
real server is tests/e2e/test_files.py's; what a big upload costs others is bench/transfer_stall.py's."""
from __future__ import annotations

import asyncio
import tempfile
import threading
import resource
from types import SimpleNamespace

import pytest
from daphne import cli, http_protocol
from twisted.internet.error import ConnectionDone
from twisted.internet.testing import StringTransport
from twisted.web import http
from twisted.web.test.requesthelper import DummyChannel

from codefyui.serving import BODY_PIECE, OPEN_FILES, raise_open_files_limit, tune_daphne

FORM = b'--b\r\nContent-Disposition: form-data; name="file"; filename="model.pt"\r\n\r\nweights\r\n--b--\r\n'


@pytest.fixture(autouse=True)
def tuned():
    tune_daphne()


def received(request_class) -> http.Request:
    """A multipart POST as Twisted takes it in, up to where Daphne would start the application."""
    channel = DummyChannel()
    channel.factory = SimpleNamespace(server=SimpleNamespace(protocol_connected=lambda request: None))
    request = request_class(channel)
    request.gotLength(len(FORM))
    request.handleContentChunk(FORM)
    request.requestHeaders.setRawHeaders(b"content-type", [b"multipart/form-data; boundary=b"])
    request.process = lambda: None
    request.requestReceived(b"POST", b"/files/upload", b"HTTP/1.1")
    return request


def test_twisted_leaves_a_forms_body_to_django():
    assert received(http.Request).args == {b"file": [b"weights"]}   # what Twisted did under Daphne
    request = received(http_protocol.WebRequest)
    assert request.args == {}
    request.content.seek(0)
    assert request.content.read() == FORM   # the body as it came, for Daphne to hand to Django


def test_daphnes_command_line_builds_a_server_that_hands_bodies_over_in_big_pieces():
    built = cli.CommandLineInterface.server_class(application=None, endpoints=["tcp:port=0"])
    assert built.request_buffer_size == BODY_PIECE


def test_no_access_line_of_twisteds_is_made():
    """Daphne writes its own access log; Twisted's line was formatted for each request, then dropped."""
    factory, lines = http_protocol.HTTPFactory(server=None), []
    factory._logFile = SimpleNamespace(write=lines.append)
    factory.log(received(http_protocol.WebRequest))
    assert lines == []


def connected(request_class=None) -> http.HTTPChannel:
    """A channel on an in-memory transport, its requests Daphne's (or ``request_class``)."""
    channel = http.HTTPChannel()
    if request_class is not None:
        channel.requestFactory = request_class
    channel.factory = http_protocol.HTTPFactory(server=SimpleNamespace(
        protocol_connected=lambda request: None, protocol_disconnected=lambda request: None,
        log_action=lambda *args: None, server_name=b""))
    channel.makeConnection(StringTransport())
    return channel


def answering() -> tuple[http_protocol.WebRequest, http.HTTPChannel]:
    """A request on a connected channel whose answer has started, as Daphne holds it."""
    channel = connected()
    request = http_protocol.WebRequest(channel)
    channel.requests.append(request)   # as the channel does once a request's headers are in
    request.method, request.clientproto, request.request_start = b"GET", b"HTTP/1.1", 0.0
    request.handle_reply({"type": "http.response.start", "status": 200, "headers": []})
    return request, channel


def test_a_long_answers_next_piece_waits_until_the_client_has_read():
    """A slow client holds a piece of its download in the server's memory, not the whole file:
    the next piece goes once the connection's send buffer has drained."""
    server = cli.CommandLineInterface.server_class(application=None, endpoints=["tcp:port=0"])
    request, channel = answering()
    server.connections = {request: {}}   # as Server.run and protocol_connected make it

    async def answer() -> None:
        piece = {"type": "http.response.body", "body": b"x" * BODY_PIECE, "more_body": True}
        await server.handle_reply(request, piece)        # the buffer has room: no wait
        channel.pauseProducing()                          # the transport's buffer is full
        writing = asyncio.ensure_future(server.handle_reply(request, piece))
        await asyncio.sleep(0.01)
        assert not writing.done()
        channel.resumeProducing()                         # the client has read it
        await asyncio.wait_for(writing, 1)
        await server.handle_reply(request, {"type": "http.response.body", "body": b"end"})

    asyncio.run(answer())
    assert request.finished and channel._requestProducer is None   # free for the connection's next request
    sent = channel.transport.value()
    assert sent.count(b"x" * BODY_PIECE) == 2 and sent.endswith(b"end\r\n0\r\n\r\n")   # every piece, in order


def test_a_closed_connection_lets_the_answers_writer_go_on():
    request, channel = answering()
    request.handle_reply({"type": "http.response.body", "body": b"x", "more_body": True})
    channel.pauseProducing()

    async def waiting() -> None:
        sending = asyncio.ensure_future(request.sent())
        await asyncio.sleep(0.01)
        assert not sending.done()
        channel.connectionLost(ConnectionDone())
        await asyncio.wait_for(sending, 1)

    asyncio.run(waiting())


def test_a_short_answer_registers_nothing():
    request, channel = answering()
    request.handle_reply({"type": "http.response.body", "body": b"ok"})
    assert request.finished and request.producer is None and channel._requestProducer is None


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


class _Spy:
    """A temp file that notes which thread writes to it."""

    def __init__(self, writers: list[int]):
        self.file, self.writers = tempfile.TemporaryFile(), writers

    def write(self, data: bytes) -> int:
        self.writers.append(threading.get_ident())
        return self.file.write(data)

    def __getattr__(self, name):
        return getattr(self.file, name)


def test_a_big_body_is_spooled_off_the_event_loop_and_the_request_starts_once_it_is_written(monkeypatch):
    """Twisted wrote a big body to its temp file on the event loop, 64 KiB at a time: on a busy
    disk a write held every request. The pieces now go to the spooler thread, in order."""
    writers: list[int] = []
    monkeypatch.setattr(http, "_getContentFile", lambda length: _Spy(writers))
    started: list[tuple[int, bytes]] = []

    class Started(http_protocol.WebRequest):
        def process(self):
            self.content.seek(0)
            started.append((threading.get_ident(), self.content.read()))

    body = bytes(range(256)) * (3 * 2**20 // 256)
    channel = connected(Started)

    async def upload() -> int:
        channel.dataReceived(f"POST /files/upload HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode())
        for i in range(0, len(body), 2**16):
            channel.dataReceived(body[i:i + 2**16])
        for _ in range(200):
            if started:
                break
            await asyncio.sleep(0.01)
        return threading.get_ident()

    loop = asyncio.run(upload())
    assert started == [(loop, body)]   # the whole body, in order, before the request started
    assert writers and loop not in writers
