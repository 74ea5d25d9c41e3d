"""The ASGI entry point: each request's middleware and view run in one hop, on one long-lived
sync thread that keeps its database connection; start-up leaves its heap frozen."""
from __future__ import annotations

import asyncio
import gc
import importlib
import json
import tempfile
import threading
import warnings

import pytest
import torch
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.core.signals import request_finished
from django.db import connection
from django.http import HttpRequest, StreamingHttpResponse

from apps.accounts.models import ApiToken
from codefyui import conf, heavy
from codefyui.api import JSON_POLICY
from codefyui.handler import SyncStackASGIHandler, max_body_bytes, request_turns

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture(autouse=True)
def unfreeze_after():
    """Importing codefyui.asgi freezes the heap (see there); the rest of the suite runs as usual."""
    yield
    gc.unfreeze()


@pytest.fixture(autouse=True)
def workers_started(monkeypatch):
    """Importing codefyui.asgi starts the run workers; here it only notes that it did
    (tests/runs/test_workers.py starts real ones)."""
    from apps.runs import service
    calls: list[int] = []
    monkeypatch.setattr(service, "start_workers", lambda: calls.append(1))
    return calls


seen: list[tuple[int, int | None]] = []  # (thread, its database connection) as each request ends


def note_where(**_) -> None:
    seen.append((threading.get_ident(), id(connection.connection) if connection.connection else None))


async def until(condition, timeout: float = 10.0) -> None:
    """Let the event loop run until ``condition()`` holds (each pass yields to every ready task)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0)


async def get(app, path: str, headers: list | None = None) -> tuple[int, bytes]:
    status, _, body = await exchange(app, path, headers)
    return status, body


async def exchange(app, path: str, headers: list | None = None, method: str = "GET",
                   pieces: tuple[bytes, ...] = (b"",)) -> tuple[int, dict[str, str], bytes]:
    """A request through the ASGI app, its body sent in ``pieces`` as a server sends them:
    its status, headers (lower-case names) and body."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"127.0.0.1"), *(headers or [])], "client": ("127.0.0.1", 1),
             "server": ("127.0.0.1", 80)}
    instance = ApplicationCommunicator(app, scope)
    for i, piece in enumerate(pieces):
        await instance.send_input({"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1})
    start = await instance.receive_output(5)
    body = b""
    while True:
        message = await instance.receive_output(5)
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await instance.wait(5)
    return start["status"], {k.decode().lower(): v.decode() for k, v in start["headers"]}, body


async def test_requests_share_one_thread_and_its_database_connection():
    app = SyncStackASGIHandler()
    seen.clear()
    request_finished.connect(note_where)
    try:
        for _ in range(3):  # a token lookup: each request reads the database
            status, _ = await get(app, "/api/runs/00000000-0000-0000-0000-000000000000",
                                  [(b"authorization", b"Bearer not-a-token")])
            assert status == 401
    finally:
        request_finished.disconnect(note_where)
    assert len(seen) == 3 and len(set(seen)) == 1 and seen[0][1], seen  # same thread, same connection
    assert seen[0][0] != threading.get_ident()  # and not the event loop's thread


async def test_the_products_pages_come_through_it():
    asgi = await sync_to_async(importlib.import_module)("codefyui.asgi")  # it touches the database
    django_application = asgi.django_application
    assert isinstance(django_application, SyncStackASGIHandler)
    status, body = await get(django_application, "/login/")
    assert status == 200 and b"Log in" in body, body[:300]


async def test_start_up_puts_its_heap_beyond_the_collector(workers_started):
    """What start-up built is frozen, so full collections under load walk only what requests make;
    start-up starts the run workers."""
    gc.unfreeze()
    await sync_to_async(lambda: importlib.reload(importlib.import_module("codefyui.asgi")))()
    assert gc.get_freeze_count() > 100_000
    assert workers_started == [1]


async def test_a_token_request_to_the_api_passes_only_the_token_middleware(student):
    """No session, CSRF or messages for a script's request: no cookie, no Vary: Cookie; the
    security headers and the JSON answer's own strict policy are there."""
    token = await sync_to_async(ApiToken.issue)(student)
    status, headers, body = await exchange(SyncStackASGIHandler(), "/api/graphs",
                                           [(b"authorization", f"Bearer {token}".encode())])
    assert status == 200 and json.loads(body) == [], body
    assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"
    assert headers["content-security-policy"] == JSON_POLICY
    assert headers["content-length"] == str(len(body))
    assert "set-cookie" not in headers and "cookie" not in headers.get("vary", "").lower()


async def test_wrong_tokens_are_counted_and_the_lockout_answered_in_json_on_that_path(student):
    app = SyncStackASGIHandler()
    wrong = [(b"authorization", b"Bearer wrong")]
    for _ in range(4):
        assert (await get(app, "/api/graphs", wrong))[0] == 401
    status, body = await get(app, "/api/graphs", wrong)
    assert status == 429 and json.loads(body) == {"detail": "Too many wrong API tokens from this computer: "
                                                            "try again in 15 minutes, or ask your teacher to unlock it"}
    token = await sync_to_async(ApiToken.issue)(student)  # a valid token is checked before axes (settings.py)
    assert (await get(app, "/api/graphs", [(b"authorization", f"Bearer {token}".encode())]))[0] == 200


async def test_a_body_that_comes_in_pieces_is_read_whole_and_in_order(student):
    """The server hands a big body over in pieces as it arrives; read_body gives the event
    loop back between them and spools them in order."""
    token = await sync_to_async(ApiToken.issue)(student)
    name = "Read in pieces: " + "".join(str(i % 10) for i in range(150))
    body = json.dumps({"name": name, "nodes": [], "edges": []}).encode()
    pieces = tuple(body[i:i + 40] for i in range(0, len(body), 40))
    status, _, answer = await exchange(SyncStackASGIHandler(), "/api/graphs",
                                       [(b"authorization", f"Bearer {token}".encode()),
                                        (b"content-type", b"application/json")], "POST", pieces)
    assert len(pieces) > 4 and status == 201, answer
    assert json.loads(answer)["name"] == name


async def test_pieces_of_a_body_that_go_to_disk_are_written_off_the_event_loop(settings, monkeypatch):
    """A write to disk may wait on a busy disk; the event loop serves everyone meanwhile."""
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 100
    pieces = [bytes([i]) * 60 for i in range(5)]
    messages = [{"type": "http.request", "body": p, "more_body": i < 4} for i, p in enumerate(pieces)]
    written_in: list[int] = []
    write = tempfile.SpooledTemporaryFile.write

    def spy(self, data):
        written_in.append(threading.get_ident())
        return write(self, data)

    monkeypatch.setattr(tempfile.SpooledTemporaryFile, "write", spy)

    async def receive():
        return messages.pop(0)

    body = await SyncStackASGIHandler().read_body(receive)
    assert body.read() == b"".join(pieces)
    loop = threading.get_ident()
    assert written_in[0] == loop and loop not in written_in[1:]   # 60 bytes fit in memory; then it is disk


async def test_a_body_the_disk_cannot_take_is_refused_with_507(settings, monkeypatch):
    """A full disk fails the upload that met it with a plain answer, and nothing else."""
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 100
    write = tempfile.SpooledTemporaryFile.write

    def full(self, data):
        if self._rolled or self.tell() + len(data) > 100:
            raise OSError(28, "No space left on device")
        return write(self, data)

    monkeypatch.setattr(tempfile.SpooledTemporaryFile, "write", full)
    status, headers, body = await exchange(SyncStackASGIHandler(), "/files/upload", method="POST",
                                           pieces=(b"x" * 60, b"y" * 60))
    assert (status, body) == (507, b"The server could not store the request's body.")
    assert headers["content-type"].startswith("text/plain")


async def test_a_body_larger_than_any_the_server_takes_is_refused_before_it_fills_the_disk(settings, monkeypatch):
    """A stranger's 50 GB POST would be spooled to disk before any view could refuse it. The
    bound is a file of a student's whole My files quota (with its form), or a graph document."""
    monkeypatch.setattr(conf, "USER_FILES_MAX_MB", 0)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    assert max_body_bytes() == 2**20
    piece = b"x" * 600_000
    declared = [(b"content-length", str(50 * 2**30).encode())]
    for headers, pieces in ((declared, (b"",)), ([], (piece, piece))):   # said beforehand, or found while reading
        status, _, body = await exchange(SyncStackASGIHandler(), "/files/upload", headers, "POST", pieces)
        assert status == 413 and body.decode() == (
            "The request is too large: this server takes at most 1 MB in one request "
            "(a file in My files may be up to 0 MB, CODEFYUI_USER_FILES_MAX_MB).")
    status, _, _ = await exchange(SyncStackASGIHandler(), "/login/", [], "POST", (piece,))
    assert status != 413   # a body within the bound goes on to its view


async def test_a_streamed_answer_is_made_off_djangos_thread_and_sent_in_big_pieces():
    """A download (a file, a tensor's .npy) is read in a thread other than Django's one request
    thread, a MiB at a time, instead of whole into a list on that thread."""
    made_in: list[int] = []

    def content():
        for _ in range(2500):
            made_in.append(threading.get_ident())
            yield b"x" * 1024

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    with warnings.catch_warnings():
        warnings.simplefilter("error")   # Django warns when it has to list a sync iterator
        await SyncStackASGIHandler().send_response(StreamingHttpResponse(content()), send)
    bodies = [m["body"] for m in sent if m.get("body")]
    assert b"".join(bodies) == b"x" * 2500 * 1024
    assert [len(b) for b in bodies] == [2**20, 2**20, 2500 * 1024 - 2 * 2**20]
    django_thread = await sync_to_async(threading.get_ident, thread_sensitive=True)()
    assert made_in and django_thread not in made_in and threading.get_ident() not in made_in


async def test_an_upload_spooled_to_disk_is_served_off_the_request_thread(student, settings):
    """Parsing and saving a big upload takes long: it gets a thread of its own, so the one
    request thread goes on serving the class."""
    token = await sync_to_async(ApiToken.issue)(student)
    headers = [(b"authorization", f"Bearer {token}".encode()), (b"content-type", b"application/json")]
    small = json.dumps({"name": "small", "nodes": [], "edges": []}).encode()
    big = json.dumps({"name": "big " + "x" * settings.FILE_UPLOAD_MAX_MEMORY_SIZE, "nodes": [], "edges": []}).encode()
    seen.clear()
    request_finished.connect(note_where)
    try:
        for body in (small, big, small):
            await exchange(SyncStackASGIHandler(), "/api/graphs", headers, "POST", (body,))
    finally:
        request_finished.disconnect(note_where)
    (first, _), (spooled, _), (third, _) = seen
    assert first == third and spooled not in (first, threading.get_ident())


async def test_requests_take_the_thread_in_turns_across_senders(monkeypatch):
    """A script's burst of requests waits behind another student's next request: turns go
    round-robin across senders, not first come first served."""
    app = SyncStackASGIHandler()
    held, order = threading.Event(), []
    respond = SyncStackASGIHandler._respond

    def noted(self, scope, body_file):
        held.wait(5)   # the thread is busy until every request is waiting
        order.append(dict(scope["headers"])[b"cookie"].decode())
        return respond(self, scope, body_file)

    monkeypatch.setattr(SyncStackASGIHandler, "_respond", noted)
    burst = [asyncio.ensure_future(get(app, "/login/", [(b"cookie", b"sessionid=script")])) for _ in range(6)]
    await until(lambda: request_turns().queued() == 4)   # two are handed to the thread
    student = asyncio.ensure_future(get(app, "/login/", [(b"cookie", b"theme=dark; sessionid=ada")]))
    await until(lambda: request_turns().queued() == 5)
    held.set()
    answers = await asyncio.gather(*burst, student)
    assert all(status == 200 for status, _ in answers)
    # two were handed to the thread before the student asked; one more script turn, then theirs
    assert order == ["sessionid=script"] * 3 + ["theme=dark; sessionid=ada"] + ["sessionid=script"] * 3


async def socket_behind_a_scripts_burst(monkeypatch, socket, order: list) -> tuple:
    """A script's six requests hold Django's thread (the first two handed to it before the
    socket asks), then ``socket`` connects: what its connect answered, once all are done.
    Each request notes "script" in ``order`` as it is served."""
    app = SyncStackASGIHandler()
    held = threading.Event()
    respond = SyncStackASGIHandler._respond

    def noted(self, scope, body_file):
        held.wait(5)   # the thread is busy until every request and the socket wait
        order.append("script")
        return respond(self, scope, body_file)

    monkeypatch.setattr(SyncStackASGIHandler, "_respond", noted)
    burst = [asyncio.ensure_future(get(app, "/login/", [(b"cookie", b"sessionid=script")])) for _ in range(6)]
    await until(lambda: request_turns().queued() == 4)   # two are handed to the thread
    connecting = asyncio.ensure_future(socket.connect(timeout=10))
    await until(lambda: request_turns().queued() == 5)
    held.set()
    assert all(status == 200 for status, _ in await asyncio.gather(*burst))
    return await connecting


async def test_a_sockets_reads_take_their_turn_with_the_requests(monkeypatch):
    """A WebSocket's reads on the request thread take their turn among the requests, as their
    sender's: a script's burst of requests holds a student's socket up for one turn only (and
    a script that opens sockets in a loop waits behind everyone else likewise)."""
    from types import SimpleNamespace

    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator

    from apps.runs import consumers
    from codefyui.routing import websocket_urlpatterns
    order = []
    monkeypatch.setattr(consumers, "find_readable", lambda *args: order.append("socket"))   # finds no run: refused
    socket = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/runs/00000000-0000-0000-0000-000000000001/",
                                   headers=[(b"cookie", b"sessionid=ada")])
    socket.scope["user"] = SimpleNamespace(is_authenticated=True, pk=-1)
    assert await socket_behind_a_scripts_burst(monkeypatch, socket, order) == (False, 4404)
    # two were handed to the thread before the socket asked; one more script turn, then its read
    assert order == ["script"] * 3 + ["socket"] + ["script"] * 3


async def test_a_browser_sockets_session_user_is_read_in_its_turn(monkeypatch):
    """A browser's socket reads its session's user in its turn among the requests: a script's
    burst holds it up for one turn only, as it holds up a token socket's reads (Channels' own
    AuthMiddleware read it on the request thread ahead of everyone waiting there)."""
    from channels.testing import WebsocketCommunicator
    from django.contrib import auth
    from django.contrib.auth.models import AnonymousUser

    from codefyui.routing import websocket_application
    order = []

    def session_user(request):   # a request's own (the login page's) reads are the script's turn
        if not isinstance(request, HttpRequest):
            order.append("socket")
        return AnonymousUser()

    monkeypatch.setattr(auth, "get_user", session_user)
    socket = WebsocketCommunicator(websocket_application(), "/ws/runs/00000000-0000-0000-0000-000000000001/",
                                   headers=[(b"host", b"testserver"), (b"origin", b"http://testserver"),
                                            (b"cookie", b"sessionid=ada")])
    assert await socket_behind_a_scripts_burst(monkeypatch, socket, order) == (False, 4404)   # no one's run
    assert order == ["script"] * 3 + ["socket"] + ["script"] * 3


async def test_who_takes_turns_is_the_token_else_the_session_else_the_address():
    from codefyui.handler import _sender
    scope = {"client": ("10.0.0.7", 5000), "headers": [(b"cookie", b"csrftoken=x; sessionid=abc")]}
    assert _sender(scope) == "session:abc"
    assert _sender({**scope, "headers": [(b"authorization", b"Bearer t0k")]}) == "token:Bearer t0k"
    assert _sender({**scope, "headers": [(b"cookie", b"csrftoken=x")]}) == "address:10.0.0.7"


async def test_a_request_given_up_while_it_waits_takes_no_turn():
    from codefyui.handler import _Turns
    turns, done = _Turns(), []

    async def request(sender, hold):
        async with turns.turn(sender):
            await hold.wait()
            done.append(sender)

    go = asyncio.Event()
    tasks = {name: asyncio.ensure_future(request(name, go)) for name in ("a", "b", "c", "d")}
    await until(lambda: turns.queued() == 2)    # a and b hold the thread; c and d wait
    tasks["c"].cancel()
    go.set()
    await asyncio.gather(*tasks.values(), return_exceptions=True)
    assert done == ["a", "b", "d"] and turns._handed == 0 and not turns._waiting


async def stats_of(student, fresh_store, values: int) -> tuple[str, list]:
    """A run of the student's with a captured tensor of ``values`` values: the path of its
    Stats summary, and headers that carry the student's token."""
    from apps.runs.models import Run
    run = await sync_to_async(Run.objects.create)(owner=student)
    fresh_store.put(str(run.pk), "relu", "tensor", torch.ones(values))
    token = await sync_to_async(ApiToken.issue)(student)
    return f"/api/execution/outputs/{run.pk}/relu/tensor/stats", [(b"authorization", f"Bearer {token}".encode())]


async def test_a_read_with_heavy_tensor_work_ahead_is_served_on_a_thread_of_its_own(student, fresh_store, monkeypatch):
    """The Stats summary of a million values is waited for off the one request thread: the
    class's other requests are served meanwhile, and the summary answers once it is done."""
    from apps.stats import cache as stats_cache
    path, auth = await stats_of(student, fresh_store, heavy.ELEMENTS)
    summarise, started, release = stats_cache.summarise, threading.Event(), threading.Event()

    def slow(value, **kwargs):
        started.set()
        release.wait(5)
        return summarise(value, **kwargs)

    monkeypatch.setattr(stats_cache, "summarise", slow)
    app = SyncStackASGIHandler()
    seen.clear()
    request_finished.connect(note_where)
    try:
        stats = asyncio.ensure_future(get(app, path, auth))
        await until(started.is_set)
        assert (await get(app, "/login/"))[0] == 200 and not stats.done()   # served while it computes
        release.set()
        status, body = await stats
    finally:
        request_finished.disconnect(note_where)
    assert status == 200 and json.loads(body)["count"] == heavy.ELEMENTS
    (tried, _), (login, _), (served, _) = seen   # in the order each ended
    assert tried == login and served not in (tried, threading.get_ident())


async def test_a_small_read_stays_on_the_request_thread_and_a_write_never_moves(student, fresh_store):
    app = SyncStackASGIHandler()
    path, auth = await stats_of(student, fresh_store, heavy.ELEMENTS - 1)
    seen.clear()
    request_finished.connect(note_where)
    try:
        assert (await get(app, path, auth))[0] == 200
    finally:
        request_finished.disconnect(note_where)
    assert len(seen) == 1 and seen[0][0] != threading.get_ident()
    with heavy.movable(), pytest.raises(heavy.MovedOff):
        heavy.ahead(heavy.ELEMENTS)
    heavy.ahead(heavy.ELEMENTS)   # outside the request thread's views: nothing to move
    with heavy.movable(False):
        heavy.ahead(heavy.ELEMENTS)   # a POST's view
