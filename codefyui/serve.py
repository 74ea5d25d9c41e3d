"""The server: ``python -m codefyui.serve [--host H] [--port P]`` serves codefyui.asgi with
Uvicorn, HTTP and WebSockets on one port, as ``make run`` starts it (tests and benches start
it the same way). Nothing else (no nginx, no broker) is needed for a class.

Uvicorn parses HTTP with httptools (C), where Daphne, the server this project started with,
parsed it with Twisted in Python: a class's burst of runs is two requests a run, and Twisted
and Daphne were over half of the server process's CPU in it. Side by side with the tree
before the switch (bench/class_burst.py --against, bursts in turns), the server process's
CPU per CNN run is 0.81-0.87x and the burst's p95 0.77-0.92x Daphne's. Uvicorn also does by
itself what codefyui/serving.py had to add to Daphne: a request's body comes to Django as it
arrives, unparsed, and the socket pauses until the application takes it
(``SyncStackASGIHandler.read_body`` spools it, off the event loop where it goes to disk); a
long answer's next piece waits until the connection has sent the previous one, so a slow
laptop's download holds about a piece of the server's memory, not its whole file
(tests/test_serve.py, bench/transfer_stall.py).

A request's head (its line and headers) is bounded (``HttpProtocol``), as Twisted bounded
a line to 16 KB: httptools gathers a header however long it is.

A class holds many connections at once (a browser keeps several, and a WebSocket per open
editor), and a process started from a shell or by systemd may open only 1024 descriptors
unless it asks: start-up raises that soft limit as far as the hard limit allows.
"""
from __future__ import annotations

import signal

if __name__ == "__mp_main__":
    # A run worker starting: multiprocessing's spawn runs the server's main module first, then
    # imports torch for seconds. Ctrl+C in the server's terminal reaches the whole process
    # group; a worker leaves its ending to the server (workers.worker_main) from here on,
    # instead of printing a KeyboardInterrupt traceback from the middle of its imports.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

import argparse
import asyncio
import resource
from typing import Callable

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from codefyui import conf

APPLICATION = "codefyui.asgi:application"
OPEN_FILES = 65536
SHUTDOWN_GRACE_S = 3   # a request still open then (a run's ?wait=, a socket) is cut off
KEEP_ALIVE_S = 75      # an idle connection's life, as nginx's default: Uvicorn's own 5 s closed a
                       # script's connection between its runs (Daphne kept one 12 hours)
MAX_HEAD_BYTES = 64 * 1024   # a request's line and headers: a browser's, cookies and all, take ~1-8 KB
TOO_LARGE = b"The request's headers are too large."
REFUSED_LINGER_S = 2   # how long the rest of a refused request is read and dropped
HEAD_TIMEOUT_S = 30    # from a connection's opening, or a head's first bytes, until the head is in
SOCKET_MESSAGE_BYTES = 64 * 1024   # a page never sends on its run socket; Uvicorn would take 16 MB
                                   # messages, 32 queued a socket: 512 MB for one student's script


class HttpProtocol(HttpToolsProtocol):
    """Uvicorn's HTTP over httptools, with a request's head bounded: httptools gathers a header
    piece by piece however long it grows, so one connection sending a 190 MB header held that
    much of the server's memory and its event loop ~40 s, before any login. Past
    MAX_HEAD_BYTES the request is answered 431 and the connection's sending side closed; what
    the client still sends is read and dropped for REFUSED_LINGER_S (closing at once, with its
    bytes unread, would reset the connection before the client read the answer). A read is
    counted only when it neither ended a head nor a request (it then held only head bytes), so
    a body is never counted, and a head gets at most two reads past the bound.

    A head must also come whole within HEAD_TIMEOUT_S of the connection's opening or of its
    first bytes: Uvicorn waits for it without end, so connections that send nothing, or a
    byte now and then, could hold the server's descriptors until it could take no one else.
    (Between requests, an idle connection is closed after KEEP_ALIVE_S.)"""

    _in_head = True    # what comes next belongs to a request's head
    _head_bytes = 0
    _moved_on = False  # this read ended a head or a request
    _refused = False
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_awaiting_head()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        self._head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self._head_too_slow)

    def _stop_awaiting_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._in_head and not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head and self._head_timer is None:   # a next request's head begins
            self._await_head()
        self._moved_on = False
        super().data_received(data)
        if self._in_head and not self._moved_on and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._refuse()

    def _refuse(self) -> None:
        self._refused = True
        self.logger.warning("A request's headers passed %d bytes: refused", MAX_HEAD_BYTES)
        self.transport.write(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; "
                             b"charset=utf-8\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s"
                             % (len(TOO_LARGE), TOO_LARGE))
        self.transport.write_eof()
        self.loop.call_later(REFUSED_LINGER_S, self.transport.close)

    def on_headers_complete(self) -> None:
        self._in_head, self._head_bytes, self._moved_on = False, 0, True
        self._stop_awaiting_head()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head, self._moved_on = True, True


def raise_open_files_limit(wanted: int = OPEN_FILES) -> int:
    """Let this process open ``wanted`` descriptors, or as many as its hard limit allows; the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft


def config(application: str | Callable = APPLICATION, host: str = "127.0.0.1", port: int = 8000) -> uvicorn.Config:
    """How the server serves: httptools for HTTP (``HttpProtocol``), websockets' sans-I/O
    protocol for the run sockets (messages up to SOCKET_MESSAGE_BYTES), asyncio's own event
    loop (uvloop measured no faster here), no lifespan messages (codefyui.asgi starts what it
    needs when it is imported). A proxy's X-Forwarded-* headers
    are left to the settings (CODEFYUI_HTTPS: ``SECURE_PROXY_SSL_HEADER``;
    CODEFYUI_TRUSTED_PROXIES: ``access.client_address``), as Daphne left them: a request's address is the connection's.
    A line per request only with CODEFYUI_ACCESS_LOG=1: each line is a logging record and a
    write, ~8 % of the server process's CPU in a class's burst of runs; errors are logged
    either way."""
    return uvicorn.Config(application, host=host, port=port, http=HttpProtocol, ws="websockets-sansio",
                          ws_max_size=SOCKET_MESSAGE_BYTES, loop="asyncio", lifespan="off", proxy_headers=False,
                          access_log=conf.ACCESS_LOG, timeout_keep_alive=KEEP_ALIVE_S,
                          timeout_graceful_shutdown=SHUTDOWN_GRACE_S)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve CodefyUI (HTTP and WebSockets) on one port.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--app", default=APPLICATION, help="the ASGI application, module:attribute")
    args = parser.parse_args(argv)
    raise_open_files_limit()
    chosen = config(args.app, args.host, args.port)
    try:
        chosen.load()   # imports the application before the event loop runs: its start-up uses the database
        uvicorn.Server(chosen).run()
    except KeyboardInterrupt:   # Ctrl+C while it starts, or once Uvicorn has shut down (it raises it again after)
        pass


if __name__ == "__main__":
    main()
