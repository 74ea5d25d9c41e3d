"""How Daphne takes in this server's HTTP requests (set up by codefyui/asgi.py, in the server
process, before Daphne builds its server).

Under Daphne, Twisted parsed every POST body that is a form into ``request.args``, which
Daphne never reads (it hands the raw body to Django), and did it with the email package on
the event loop: a 64 MB multipart upload held every request of the server for ~6.5 s
(bench/transfer_stall.py), and every POST paid ~0.1 ms to parse its Content-Type. Daphne then
queued the body for Django in 8 KiB pieces. Here requests leave their bodies to Django, in
1 MiB pieces (``SyncStackASGIHandler.read_body`` gives the event loop back between pieces),
and Twisted's own access line, formatted per request and then thrown away (Daphne sends
Twisted's log nowhere and writes its own access log), is not made.

Twisted spools a body of 100 KB or more to a temp file as it arrives, in the socket's 64 KiB
reads, on the event loop: on a busy disk one write held every request ~0.1 s. Here those
writes go, a MiB at a time and in order, to one thread of their own, and the request starts
once they are done (``Request.handleContentChunk``, ``requestReceived``).

Daphne also wrote every piece of an answer into Twisted's send buffer as soon as Django made
it, whether or not the client was reading: a download to a slow laptop sat whole in the
server's memory (64 MB each, for a class downloading at once). Here a long answer's next
piece waits until the connection has sent the previous one (``Server.handle_reply``), so a
slow client holds about a piece of memory, not its whole file.

A class holds many connections at once (a browser keeps several, and a WebSocket per open
editor), and a process started from a shell or by systemd may open only 1024 descriptors
unless it asks: start-up raises that soft limit as far as the hard limit allows.
"""
from __future__ import annotations

import asyncio
import io
import resource
from concurrent.futures import Future, ThreadPoolExecutor

from daphne import cli, http_protocol, server

BODY_PIECE = 2**20
OPEN_FILES = 65536


class _Sent:
    """Twisted's push-producer interface over an asyncio event: the connection pauses it
    when its send buffer is full and resumes it once the client has read that buffer."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.event.set()

    def pauseProducing(self) -> None:
        self.event.clear()

    def resumeProducing(self) -> None:
        self.event.set()

    def stopProducing(self) -> None:
        self.event.set()


# One thread writes every spooled body: a request's pieces land in the order they came.
_SPOOLER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="body-spooler")


class Request(http_protocol.WebRequest):
    _unwritten: bytearray | None = None   # a spooled body's bytes not yet handed to the spooler
    _spooled: Future | None = None        # the last write handed to it
    _spool_failed = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)

    def gotLength(self, length) -> None:
        super().gotLength(length)   # Twisted: in memory under 100 KB, else a temp file
        self._unwritten = None if isinstance(self.content, io.BytesIO) else bytearray()

    def handleContentChunk(self, data: bytes) -> None:
        if self._unwritten is None:
            return super().handleContentChunk(data)
        self._unwritten += data
        if len(self._unwritten) >= BODY_PIECE:
            self._spool()

    def _spool(self) -> None:
        piece, self._unwritten = bytes(self._unwritten), bytearray()
        self._spooled = _SPOOLER.submit(self.content.write, piece)
        self._spooled.add_done_callback(self._note_failure)

    def _note_failure(self, written: Future) -> None:
        if written.exception() is not None:   # the disk is full, say: any piece, not only the last
            self._spool_failed = True

    def requestReceived(self, command, path, version) -> None:
        """The whole body is in: once the spooler has written it, Twisted reads it back and
        Daphne starts the application."""
        if self._unwritten is None:
            return super().requestReceived(command, path, version)
        self._spool()

        def written(_) -> None:
            if self.channel is None:   # the client went away meanwhile
                return
            super(Request, self).requestReceived(command, path, version)

        asyncio.wrap_future(self._spooled).add_done_callback(written)

    def process(self):
        if self._spool_failed:
            return self.basic_error(507, b"Insufficient Storage", "The server could not store the request's body.")
        return super().process()

    def handle_reply(self, message) -> None:
        if _more_to_come(message) and self.producer is None and not self.finished and self.channel is not None:
            self.registerProducer(_Sent(), True)   # a long answer: its pieces go as the client reads them
        super().handle_reply(message)

    async def sent(self) -> None:
        """Until the connection has sent what it holds of a long answer (or has closed)."""
        if isinstance(self.producer, _Sent):
            await self.producer.event.wait()

    def finish(self) -> None:
        if isinstance(self.producer, _Sent) and self.channel is not None:
            self.unregisterProducer()   # the next request on this connection may register its own
        super().finish()

    def connectionLost(self, reason) -> None:
        if isinstance(self.producer, _Sent):
            self.producer.stopProducing()   # nothing more will be sent: let the answer's writer go on
        super().connectionLost(reason)


class Server(server.Server):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("request_buffer_size", BODY_PIECE)
        super().__init__(*args, **kwargs)

    async def handle_reply(self, protocol, message) -> None:
        await super().handle_reply(protocol, message)
        if _more_to_come(message) and isinstance(protocol, Request):
            await protocol.sent()


def _more_to_come(message) -> bool:
    return message["type"] == "http.response.body" and message.get("more_body", False)


def _no_access_line(factory, request) -> None:
    pass


def raise_open_files_limit(wanted: int = OPEN_FILES) -> int:
    """Let this process open ``wanted`` descriptors, or as many as its hard limit allows; the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft


def tune_daphne() -> None:
    """Point Daphne's command line at the server and requests above. Daphne imports the
    application before it builds its server, so this runs in time; HTTPFactory.buildProtocol
    reads the request class from its module at each connection."""
    raise_open_files_limit()
    http_protocol.WebRequest = Request
    http_protocol.HTTPFactory.log = _no_access_line
    cli.CommandLineInterface.server_class = Server
