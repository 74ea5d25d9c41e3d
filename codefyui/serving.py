"""What CodefyUI's server needs that Daphne does not do by itself, in this one module
(``python -m codefyui.serve`` runs ``run``; why each, and what it risks at an upgrade:
docs/decisions/serving.md; each is checked against a real server in tests/test_serve.py).

- No form parsing on the event loop: Twisted parsed a POST form into ``request.args``, which
  Daphne never reads, with the email package on the loop (a 64 MB upload held every request
  ~6.5 s). Requests here leave the body to Django (``parsePOSTFormSubmission=False``).
- A body of STREAMED_FROM or more (or of no declared length) reaches the application as it
  arrives, not once Twisted has buffered all of it in a temp file: the application starts
  when the head is in, and each ``receive`` takes what has come since the last, in one
  message (``Request.receiving``); past BODY_PIECE untaken the socket pauses until the
  application takes it. So ``SyncStackASGIHandler`` refuses a too large body (413) before
  reading it, and spools it off the event loop itself (507 when the disk is full). An answer
  that goes before its body has all come closes the connection: what still comes is read
  and dropped for REFUSED_LINGER_S (``Channel.linger``). Smaller bodies come in a read or
  two: Daphne hands them over whole, in one message (``request_buffer_size``).
- A long answer goes as fast as its client reads it: Daphne wrote every piece into
  Twisted's send buffer at once, so a slow laptop's 64 MB download sat whole in the
  server's memory. Here a piece's ``send`` returns once the connection has sent what it
  holds (``Server.handle_reply``, ``_Sent``).
- A request's head (line and headers) is bounded to MAX_HEAD_BYTES, answered 431 past it
  (Twisted bounds it to 16 KB with a bare 400), and must come whole within HEAD_TIMEOUT_S
  of the connection's opening or of its first bytes (Twisted's idle timeout restarts at
  every byte: a byte now and then would hold a descriptor for ever).
- An idle kept-alive connection lives KEEP_ALIVE_S (Twisted's default is 60 s): a script's
  connection outlives the wait between two of its runs.
- WebSocket messages (and frames) are bounded to SOCKET_MESSAGE_BYTES: a page sends none
  on its run socket, and Daphne's 1 MB default lets one script hold that much a socket.
- Twisted's own access line is not made (Daphne sends Twisted's log nowhere); Daphne's
  access log only with CODEFYUI_ACCESS_LOG=1 (a line a request is CPU in a class's burst).
- The open-files soft limit is raised at start-up: a class holds many connections (a
  browser keeps several, and a WebSocket per open editor), and a process started from a
  shell or by systemd may open only 1024 descriptors unless it asks.
"""
from __future__ import annotations

from daphne import server  # isort:skip  (first: it installs Twisted's asyncio reactor)

import asyncio
import io
import logging
import resource
import sys

from asgiref.compatibility import guarantee_single_callable
from daphne import http_protocol
from daphne.access import AccessLogGenerator
from daphne.endpoints import build_endpoint_description_strings
from daphne.utils import import_by_path
from twisted.internet import reactor
from twisted.web import http

from codefyui import conf

OPEN_FILES = 65536
BODY_PIECE = 2**20          # a body's bytes the server holds for the application before the socket pauses
STREAMED_FROM = 2**16       # a declared body this large or larger is handed over as it arrives
MAX_HEAD_BYTES = 64 * 1024  # a request's line and headers: a browser's, cookies and all, take ~1-8 KB
TOO_LARGE = b"The request's headers are too large."
HEAD_TIMEOUT_S = 30         # from a connection's opening, or a head's first bytes, until the head is in
REFUSED_LINGER_S = 2        # how long the rest of a refused request is read and dropped
KEEP_ALIVE_S = 75           # an idle connection's life between requests, as nginx's default
SOCKET_MESSAGE_BYTES = 64 * 1024

logger = logging.getLogger(__name__)


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


class Request(http_protocol.WebRequest):
    """Daphne's request, with its form left unparsed, a big body streamed to the application
    (``receiving``) and a long answer paced by its client (``sent``)."""

    _body: bytearray | None = None    # a streamed body's bytes come and not yet taken; None once all are
    _arrived: asyncio.Event | None = None   # set when bytes or the body's end come, or the client goes
    _body_in = False                  # the whole body has come
    _paused = False                   # this request paused the socket: the application is behind
    _lost = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)

    @property
    def streamed(self) -> bool:
        return self._arrived is not None

    def gotLength(self, length) -> None:
        if length is not None and length < STREAMED_FROM:
            return super().gotLength(length)   # in memory, handed over whole once it is in
        self.content = io.BytesIO()   # stays empty: Twisted's requestReceived and Daphne's process read it
        self._body, self._arrived = bytearray(), asyncio.Event()

    def start(self, command: bytes, path: bytes, version: bytes) -> None:
        """A streamed request's head is in: Twisted notes it and Daphne starts the
        application (``Server.create_application``), before any of the body."""
        super().requestReceived(command, path, version)

    def handleContentChunk(self, data: bytes) -> None:
        if not self.streamed:
            return super().handleContentChunk(data)
        self._body += data
        self._arrived.set()
        if len(self._body) >= BODY_PIECE:
            self._paused = True
            self.transport.pauseProducing()

    def requestReceived(self, command, path, version) -> None:
        """Twisted: the whole body is in. A streamed request's application runs already."""
        if not self.streamed:
            return super().requestReceived(command, path, version)
        self._body_in = True
        self._arrived.set()

    def receiving(self, receive):
        """The application's ``receive`` for a streamed body: what has come since it last
        asked, as one message, until the body's end; then Daphne's own (its disconnect)."""

        async def body_first():
            while self._body is not None:
                if self._body or self._body_in:
                    piece = bytes(self._body)
                    self._body = None if self._body_in else bytearray()
                    if self._paused and not self._lost:
                        self._paused = False
                        self.transport.resumeProducing()
                    return {"type": "http.request", "body": piece, "more_body": self._body is not None}
                if self._lost:
                    break
                self._arrived.clear()
                await self._arrived.wait()
            return await receive()

        return body_first

    def handle_reply(self, message) -> None:
        if self.finished or self.channel is None:
            return
        if message.get("type") == "http.response.start" and self.streamed and not self._body_in:
            # Answered before its body has all come (a 413, say): this connection ends with it.
            self.responseHeaders.setRawHeaders(b"connection", [b"close"])
            self.channel.persistent = False
        elif _more_to_come(message) and self.producer is None:
            self.registerProducer(_Sent(), True)   # a long answer: its pieces go as the client reads them
        super().handle_reply(message)

    async def sent(self) -> None:
        """Until the connection has sent what it holds of a long answer (or has closed)."""
        if isinstance(self.producer, _Sent):
            await self.producer.event.wait()

    def finish(self) -> None:
        if self.channel is not None:
            if isinstance(self.producer, _Sent):
                self.unregisterProducer()   # the next request on this connection may register its own
            if self.streamed and not self._body_in:
                self.channel.dropping = True   # the rest of the body is read and dropped, not parsed
        super().finish()

    def connectionLost(self, reason) -> None:
        self._lost = True
        if self._arrived is not None:
            self._arrived.set()
        if isinstance(self.producer, _Sent):
            self.producer.stopProducing()   # nothing more will be sent: let the answer's writer go on
        super().connectionLost(reason)


class Channel(http.HTTPChannel):
    """Twisted's HTTP/1.1 connection, with a request's head bounded in size (MAX_HEAD_BYTES,
    431) and in time (HEAD_TIMEOUT_S), and a streamed request started once its head is in.
    (No HTTP/2: Daphne offers it only over TLS, which this server does not terminate.)"""

    MAX_LENGTH = MAX_HEAD_BYTES              # one line of a head (LineReceiver's bound)
    totalHeadersSize = 2 * MAX_HEAD_BYTES    # Twisted's own bound: ours, counting line ends, comes first
    dropping = False   # what comes is read and dropped: its last answer went before its request was all in
    _in_head = True    # what comes next belongs to a request's head
    _head_bytes = 0
    _head_timer = None   # one a connection, reset for each head (a new timer a request cost ~17 us)
    _head_timed = False  # it counts for the head now coming
    _lingering = False

    def connectionMade(self) -> None:
        super().connectionMade()
        self._await_head()

    def dataReceived(self, data: bytes) -> None:
        if self.dropping:
            return
        if self._in_head and not self._head_timed:   # a next request's head begins
            self._await_head()
        super().dataReceived(data)

    def lineReceived(self, line: bytes) -> None:
        if self.dropping:
            return
        self._head_bytes += len(line) + 2
        if self._head_bytes > MAX_HEAD_BYTES:
            return self._refuse_head()
        super().lineReceived(line)

    def lineLengthExceeded(self, line: bytes) -> None:
        self._refuse_head()

    def allHeadersReceived(self) -> None:
        self._in_head = self._head_timed = False
        self._head_bytes = 0
        super().allHeadersReceived()
        request = self.requests[-1]
        if request.streamed:   # Twisted's own note of the request line (private attributes)
            request.start(self._command, self._path, self._version)

    def requestDone(self, request) -> None:
        self._in_head = True   # before Twisted's: it may go on to parse a pipelined request
        super().requestDone(request)

    def loseConnection(self) -> None:
        if self.dropping:   # a request's answer went before its body: Twisted closes after it
            return self.linger()
        super().loseConnection()

    def connectionLost(self, reason) -> None:
        self._stop_awaiting_head()
        super().connectionLost(reason)

    def _await_head(self) -> None:
        self._head_timed = True
        if self._head_timer is not None and self._head_timer.active():
            self._head_timer.reset(HEAD_TIMEOUT_S)
        else:
            self._head_timer = reactor.callLater(HEAD_TIMEOUT_S, self._head_too_slow)

    def _stop_awaiting_head(self) -> None:
        if self._head_timer is not None and self._head_timer.active():
            self._head_timer.cancel()
        self._head_timer, self._head_timed = None, False

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._in_head and self._head_timed:
            self.loseConnection()

    def _refuse_head(self) -> None:
        logger.warning("A request's headers passed %d bytes: refused", MAX_HEAD_BYTES)
        self.transport.write(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; "
                             b"charset=utf-8\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s"
                             % (len(TOO_LARGE), TOO_LARGE))
        self.linger()

    def linger(self) -> None:
        """End a connection whose client may still be sending: send what is written, close the
        sending side, and read and drop what comes for REFUSED_LINGER_S before closing
        (closing at once, with its bytes unread, would reset the connection before the client
        read the answer)."""
        if self._lingering:
            return
        self.dropping = self._lingering = True
        self.clearLineBuffer()
        self._stop_awaiting_head()
        self.setTimeout(None)
        self.transport.unregisterProducer()   # else a paused transport resumes it instead of closing
        self.transport.resumeProducing()      # a streamed body may have paused reading
        self.transport.loseWriteConnection()
        reactor.callLater(REFUSED_LINGER_S, self.transport.loseConnection)


class HTTPFactory(http_protocol.HTTPFactory):
    """Daphne's, making this module's connections and requests, idle connections kept
    KEEP_ALIVE_S, and no access line of Twisted's (formatted per request, then dropped)."""

    protocol = Channel

    def __init__(self, server_) -> None:
        super().__init__(server_)
        self.timeOut = KEEP_ALIVE_S

    def buildProtocol(self, addr):
        channel = super().buildProtocol(addr)
        channel.requestFactory = Request
        return channel

    def log(self, request) -> None:
        pass


class Server(server.Server):
    """Daphne's server on ``host:port`` with this module's HTTP (``HTTPFactory``), bodies
    handed over in big pieces, WebSocket messages bounded, and long answers paced."""

    def __init__(self, application, host: str = "127.0.0.1", port: int = 8000) -> None:
        super().__init__(
            application, endpoints=build_endpoint_description_strings(host=host, port=port),
            request_buffer_size=BODY_PIECE, websocket_max_message_size=SOCKET_MESSAGE_BYTES,
            websocket_max_frame_size=SOCKET_MESSAGE_BYTES,
            action_logger=AccessLogGenerator(sys.stdout) if conf.ACCESS_LOG else None)

    @property
    def http_factory(self) -> HTTPFactory:
        return self._http_factory

    @http_factory.setter
    def http_factory(self, daphnes) -> None:   # Server.run makes Daphne's; this module's serves instead
        self._http_factory = HTTPFactory(self)

    def create_application(self, protocol, scope):
        """Daphne's, giving a streamed request's application its ``receive``; Daphne then
        queues no body of its own (it reads none from a closed ``content``)."""
        if not (isinstance(protocol, Request) and protocol.streamed):
            return super().create_application(protocol, scope)
        application = self.application
        self.application = lambda scope, receive, send: application(
            scope=scope, receive=protocol.receiving(receive), send=send)
        try:
            queue = super().create_application(protocol, scope)
        finally:
            self.application = application
        protocol.content.close()
        return queue

    async def handle_reply(self, protocol, message) -> None:
        await super().handle_reply(protocol, message)
        if _more_to_come(message) and isinstance(protocol, Request):
            await protocol.sent()


def _more_to_come(message) -> bool:
    return message["type"] == "http.response.body" and message.get("more_body", False)


def raise_open_files_limit(wanted: int = OPEN_FILES) -> int:
    """Let this process open ``wanted`` descriptors, or as many as its hard limit allows; the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft


def run(application: str, host: str, port: int) -> None:
    """Serve ``application`` (module:attribute) on ``host:port`` until Ctrl+C or SIGTERM.
    The application is imported first, as Daphne's command line does (its start-up uses
    the database and starts the run workers); Daphne's lines ("Listening on TCP address
    ...") go to stderr."""
    raise_open_files_limit()
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)-15s %(levelname)-8s %(message)s"))
    logging.getLogger("daphne").addHandler(handler)   # this module's go with codefyui's (settings.LOGGING)
    logging.getLogger("daphne").setLevel(logging.INFO)
    loaded = guarantee_single_callable(import_by_path(application))
    Server(loaded, host, port).run()
