"""Django's ASGI handler, serving each request in one hop to one long-lived sync thread.

Every view and middleware here is sync. Django's stock handler gives each request a thread
of its own (started and joined per request, with a fresh database connection) and, with
the stack built in async mode, hops between the event loop and that thread for every
middleware hook and the view. Those hops, thread starts and connects cost more
than rendering a small Inspector fragment (bench/inspector_render.py). Here the stack is built
in sync mode and entered once, on the one thread Django keeps for thread-sensitive code, as
a single-threaded WSGI server would: its database connection persists (CONN_MAX_AGE), and
with the GIL nothing is lost in throughput. Long work never runs in a request: runs have
their own pool (apps/runs), port statistics theirs (apps/stats/cache.py). Big transfers keep
off that thread too: an upload spooled to disk is served on a thread of its own, and a
streamed answer (a download) is read in one (``handle``, ``send_response``).
WebSockets do not pass through here; their consumers' short database reads use that same
thread, taking their turns with the requests (``in_turn``).

Requests take that thread in turns, round-robin across who sends them (``_Turns``): a
student's script that sends a hundred requests at once, or a page reloading in a loop, waits
behind everyone else's next request instead of holding the class up for all of its own. A
WebSocket's reads (a token's user, its run, the catch-up) take the same turns under the same
sender, so a script that opens sockets in a loop waits likewise.

A read whose view finds long tensor work ahead (the Stats or a heat map of a capture of a
million values or more) gives the thread back and is served again from its start on a
thread of its own, in turns likewise (codefyui/heavy.py): one student's 100-million-value
capture no longer holds every other student's click for half a second.

A request to the JSON API that carries an API token (a script, a class's bench) passes
through ``settings.TOKEN_API_MIDDLEWARE`` instead: it has no session, CSRF cookie, messages,
htmx or static file to serve, and skipping those is a fifth of such a request's Django time."""
from __future__ import annotations

import asyncio
import io
import os
import re
import tempfile
import weakref
from contextlib import asynccontextmanager
from typing import AsyncIterator, Callable, Iterator, TypeVar

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import ImproperlyConfigured, RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponseBase
from django.urls import set_script_prefix
from django.utils.module_loading import import_string

from codefyui import conf, heavy
from codefyui.fairqueue import FairQueue


T = TypeVar("T")

# Heavy reads served at once, each on a thread of its own: a core stays with everyone else's.
HEAVY_IN_FLIGHT = max(1, (os.cpu_count() or 2) - 1)


class SyncStackASGIHandler(ASGIHandler):
    chunk_size = 2**20  # a fragment's body goes to the server as one message, not 64 KiB pieces

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        self.token_api = _Stack(settings.TOKEN_API_MIDDLEWARE)
        self.token_api_around = _Stack(settings.TOKEN_API_MIDDLEWARE, view=lambda request: request.made_answer)
        self.heavy_turns = _Turns(in_flight=HEAVY_IN_FLIGHT)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django serves HTTP only, not {scope['type']}")
        await self.handle(scope, receive, send)  # no per-request ThreadSensitiveContext

    async def handle(self, scope, receive, send) -> None:
        """Django's, in one hop to the sync thread where Django makes three (request_started,
        the view, the response's close with request_finished), and without a task listening
        for a disconnect beside each request: a view here returns in milliseconds (a long
        wait is the ASGI middleware's, apps/runs/api.py)."""
        try:
            if _declared_length(scope) > max_body_bytes():   # refused before a byte of it is read
                raise BodyTooLarge()
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        except BodyTooLarge:
            await _answer_plainly(send, 413, body_too_large())
            return
        except OSError:   # the disk is full, say: nothing is lost but this request
            await _answer_plainly(send, 507, "The server could not store the request's body.")
            return
        set_script_prefix(get_script_prefix(scope))
        try:
            # An upload spooled to disk is served on a thread of its own: parsing and saving it
            # takes long (a 64 MB file ~0.7 s), and on the one request thread every other
            # request would wait for it (bench/transfer_stall.py).
            if _spooled_to_disk(body_file):
                response = await sync_to_async(self._respond, thread_sensitive=False)(
                    scope, body_file, on_request_thread=False)
            else:
                sender = _sender(scope)
                async with request_turns().turn(sender):
                    response = await sync_to_async(self._respond, thread_sensitive=True)(scope, body_file)
                if response is None:   # its view needs long tensor work (codefyui/heavy.py): again, elsewhere
                    body_file.seek(0)
                    async with self.heavy_turns.turn(sender):
                        response = await sync_to_async(self._respond, thread_sensitive=False)(
                            scope, body_file, on_request_thread=False)
            await self.send_response(response, send)
            if response.streaming:   # its content has gone out only now
                await sync_to_async(response.close, thread_sensitive=True)()
        finally:
            body_file.close()

    async def send_made_answer(self, scope, send, answer: HttpResponseBase) -> None:
        """Send an answer to a token API request that was made without a view (a run's state
        from memory, apps/runs/api.py) through the token API's middleware, here on the event
        loop: the host and HTTPS checks and the headers are Django's own, with no turn on the
        request thread. The answer and that middleware read no database."""
        request, response = self.create_request(scope, io.BytesIO())
        if request is not None:
            request.made_answer = answer
            response = self.token_api_around.get_response(request)
        await self.send_response(response, send)

    async def read_body(self, receive):
        """The body, spooled as Django does, giving the event loop back after each piece: a big
        upload's pieces may be waiting all at once, and writing them out in one go held every
        other request for the whole of it (bench/transfer_stall.py). Pieces that go to disk are
        written from another thread: on a busy disk one write could hold the loop ~0.1 s. A
        body past ``max_body_bytes`` (one sent without its length) stops there: BodyTooLarge."""
        body_file = tempfile.SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE, mode="w+b")
        limit = max_body_bytes()
        try:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise RequestAborted()
                piece = message.get("body", b"")
                size = body_file.tell() + len(piece)
                if size > limit:
                    raise BodyTooLarge()
                if size > settings.FILE_UPLOAD_MAX_MEMORY_SIZE:
                    await asyncio.to_thread(body_file.write, piece)   # to disk: it may wait on the disk
                else:
                    body_file.write(piece)
                if not message.get("more_body", False):
                    break
                await asyncio.sleep(0)
        except BaseException:
            body_file.close()
            raise
        body_file.seek(0)
        return body_file

    async def send_response(self, response: HttpResponseBase, send) -> None:
        if response.streaming and not response.is_async:
            response.streaming_content = _pieces_off_thread(response.streaming_content)
        await super().send_response(response, send)

    def _respond(self, scope, body_file, on_request_thread: bool = True) -> HttpResponseBase | None:
        """The response, or None where the view moved its heavy work off the request thread."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            try:
                with heavy.movable(on_request_thread and request.method in ("GET", "HEAD")):
                    response = (self.token_api if _token_api(request) else self).get_response(request)
            except heavy.MovedOff:
                signals.request_finished.send(sender=self.__class__)
                return None
        if not response.streaming:
            response.close()   # its content is bytes already
        return response


class BodyTooLarge(Exception):
    """A request's body is larger than any this server takes (``max_body_bytes``)."""


def max_body_bytes() -> int:
    """The largest body a request may have: a file as large as a student's whole My files
    quota with its form around it (a larger one could never be kept), or a graph document
    (DATA_UPLOAD_MAX_MEMORY_SIZE). Anything larger would only fill the server's disk before
    a view could refuse it, and a stranger could send it before logging in."""
    return max(conf.USER_FILES_MAX_MB * 2**20 + 2**20, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def body_too_large() -> str:
    return (f"The request is too large: this server takes at most {max_body_bytes() // 2**20} MB in one "
            f"request (a file in My files may be up to {conf.USER_FILES_MAX_MB} MB, CODEFYUI_USER_FILES_MAX_MB).")


def _declared_length(scope) -> int:
    """The Content-Length a request declares (0 when it declares none, or nonsense)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return int(value) if value.isdigit() else 0
    return 0


async def _answer_plainly(send, status: int, text: str) -> None:
    """An answer made without Django, for a request Django never saw."""
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _pieces_off_thread(content: Iterator[bytes]) -> AsyncIterator[bytes]:
    """A streamed answer's pieces (a file, a tensor's .npy or CSV), made in a thread other than
    Django's and gathered into 1 MiB sends. Django itself would read the whole of it into a
    list on its one request thread, then send it in the file's 4 KiB reads: a 64 MB download
    held every other request ~0.2 s and took 64 MB more memory (bench/transfer_stall.py)."""
    pieces = iter(content)

    def gather() -> tuple[bytes, bool]:
        """The next MiB, and whether it is the last (a small file takes one hop)."""
        gathered = bytearray()
        for piece in pieces:
            gathered += piece
            if len(gathered) >= SyncStackASGIHandler.chunk_size:
                return bytes(gathered), False
        return bytes(gathered), True

    last = False
    while not last:
        piece, last = await sync_to_async(gather, thread_sensitive=False)()
        if piece:
            yield piece


def _spooled_to_disk(body_file) -> bool:
    size = body_file.seek(0, os.SEEK_END)
    body_file.seek(0)
    return size > settings.FILE_UPLOAD_MAX_MEMORY_SIZE


class _Turns:
    """Turns on Django's one request thread, taken round-robin across senders (a FairQueue of
    waiting requests). Two requests are handed to the thread at a time, so that it never idles
    while the event loop hands it the next one. Heavy requests take turns the same way for
    their own threads (``in_flight`` of them). Used on the event loop only: no lock."""

    def __init__(self, in_flight: int = 2) -> None:
        self._in_flight = in_flight
        self._waiting = FairQueue()   # of futures, one per waiting request
        self._handed = 0

    @asynccontextmanager
    async def turn(self, sender: str) -> AsyncIterator[None]:
        if self._handed < self._in_flight and not self._waiting:
            self._handed += 1
        else:
            turn = asyncio.get_running_loop().create_future()
            self._waiting.push(sender, turn)
            try:
                await turn
            except asyncio.CancelledError:
                if not turn.cancelled():   # its turn had come: pass it on
                    self._next()
                raise
        try:
            yield
        finally:
            self._next()

    def queued(self) -> int:
        """How many requests wait for a turn."""
        return len(self._waiting)

    def _next(self) -> None:
        """A turn ended: the next waiting request takes it, or the thread has one fewer."""
        while self._waiting:
            turn = self._waiting.pop()
            if not turn.cancelled():
                turn.set_result(None)
                return
        self._handed -= 1


_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Turns] = weakref.WeakKeyDictionary()


def request_turns() -> _Turns:
    """The turns on Django's request thread that every request and every socket of this event
    loop take (one loop in a server; each test has its own)."""
    loop = asyncio.get_running_loop()
    turns = _TURNS.get(loop)
    if turns is None:
        turns = _TURNS[loop] = _Turns()
    return turns


async def in_turn(scope, work: Callable[[], T]) -> T:
    """A WebSocket's short database work, on Django's request thread in its turn among every
    request and socket of the class, as its sender's (``_sender``: its token or session)."""
    async with request_turns().turn(_sender(scope)):
        return await database_sync_to_async(work)()


_SESSION = re.compile(rb"(?:^|;)\s*" + re.escape(settings.SESSION_COOKIE_NAME.encode()) + rb"=([^;]*)")


def _sender(scope) -> str:
    """Who sends a request, as far as taking turns goes (nothing is checked here): its API
    token, else its session cookie, else its address."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            return "token:" + value.decode("latin-1")
        if name == b"cookie" and (session := _SESSION.search(value)):
            return "session:" + session[1].decode("latin-1")
    return "address:" + str((scope.get("client") or ("",))[0])


def _token_api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/") and "Authorization" in request.headers


class _Stack(BaseHandler):
    """Django's request handling through a middleware list of its own, served sync, around
    the URL's view or around ``view``. (BaseHandler.load_middleware reads settings.MIDDLEWARE
    only: this is its sync path.)"""

    def __init__(self, paths: list[str], view: Callable[[HttpRequest], HttpResponseBase] | None = None):
        super().__init__()
        self._view_middleware, self._template_response_middleware, self._exception_middleware = [], [], []
        handler = convert_exception_to_response(view or self._get_response)
        for path in reversed(paths):
            middleware = import_string(path)(handler)
            if hasattr(middleware, "process_view"):
                self._view_middleware.insert(0, middleware.process_view)
            if hasattr(middleware, "process_template_response"):
                self._template_response_middleware.append(middleware.process_template_response)
            if hasattr(middleware, "process_exception"):
                self._exception_middleware.append(middleware.process_exception)
            handler = convert_exception_to_response(middleware)
        if view is not None and (self._view_middleware or self._template_response_middleware or self._exception_middleware):
            # Around a made answer there is no view for their hooks to see: it would skip them.
            raise ImproperlyConfigured(f"{paths} has view hooks: an answer made without a view cannot pass through them")
        self._middleware_chain = handler
