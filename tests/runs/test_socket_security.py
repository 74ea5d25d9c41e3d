"""The run WebSocket's defences: one spelling of a run id (any other is refused, never a
500, and the socket that is accepted gets the run's events), an Origin that must match
scheme, host and port, and logging out closes that user's sockets."""
from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.layers import channel_layers
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import Client

from apps.runs import push
from apps.runs.engine.events import Event
from apps.runs.models import Run
from codefyui.routing import same_origin, websocket_urlpatterns

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


def socket(user, path, origin="http://testserver", host="testserver", **scope):
    headers = [(b"host", host.encode())] + ([(b"origin", origin.encode())] if origin else [])
    communicator = WebsocketCommunicator(same_origin(URLRouter(websocket_urlpatterns)), path, headers=headers)
    communicator.scope.update(user=user, **scope)
    return communicator


@pytest.fixture
async def run(student):
    return await database_sync_to_async(Run.objects.create)(owner=student, status=Run.Status.RUNNING)


@pytest.mark.parametrize("spelling", [str.upper, lambda i: "{" + i + "}", lambda i: f"urn:uuid:{i}",
                                      lambda i: i.replace("-", ""), lambda i: i + "%00"])
async def test_any_other_spelling_of_a_run_id_is_refused_not_a_500(student, run, spelling):
    connected, _ = await socket(student, f"/ws/runs/{spelling(str(run.pk))}/").connect()
    assert not connected


async def test_an_unknown_socket_path_is_refused(student):
    connected, _ = await socket(student, "/ws/elsewhere/").connect()
    assert not connected


async def test_the_accepted_socket_joins_the_group_that_gets_the_runs_events(student, run):
    communicator = socket(student, f"/ws/runs/{run.pk}/")
    assert (await communicator.connect())[0]
    await communicator.receive_from(timeout=5)  # the catch-up
    await database_sync_to_async(push.publish)(Event(kind="node_started", run_id=str(run.pk), node_id="input"))
    assert 'id="badge-input"' in await communicator.receive_from(timeout=5)
    await communicator.disconnect()


@pytest.mark.parametrize("origin, host, scope", [
    ("http://testserver", "testserver", {}),
    ("http://testserver:8000", "testserver:8000", {}),
    ("https://testserver", "testserver", {"scheme": "wss"}),
])
async def test_a_page_of_this_server_may_open_the_socket(student, run, origin, host, scope):
    communicator = socket(student, f"/ws/runs/{run.pk}/", origin=origin, host=host, **scope)
    assert (await communicator.connect())[0]
    await communicator.disconnect()


@pytest.mark.parametrize("origin, host", [
    ("http://testserver:8001", "testserver:8000"),   # another port of the same host
    ("https://testserver", "testserver"),            # another scheme
    ("http://testserver", "testserver:8000"),
    ("http://evil.example", "testserver"),           # another host
    ("null", "testserver"),
    ("", "testserver"),                              # no Origin at all
    ("http://evil.example", "evil.example"),         # a host not in ALLOWED_HOSTS
])
async def test_a_foreign_origin_is_refused(student, run, origin, host):
    connected, _ = await socket(student, f"/ws/runs/{run.pk}/", origin=origin, host=host).connect()
    assert not connected


async def test_behind_the_schools_proxy_the_page_is_https(student, run, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proxied = socket(student, f"/ws/runs/{run.pk}/", origin="https://testserver")
    proxied.scope["headers"].append((b"x-forwarded-proto", b"https"))
    assert (await proxied.connect())[0]
    await proxied.disconnect()
    plain = socket(student, f"/ws/runs/{run.pk}/", origin="https://testserver")  # no proxy header: ws
    assert not (await plain.connect())[0]


async def test_a_trusted_origin_may_open_the_socket(student, run, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://codefy.school.example"]
    communicator = socket(student, f"/ws/runs/{run.pk}/", origin="https://codefy.school.example")
    assert (await communicator.connect())[0]
    await communicator.disconnect()


async def test_logging_out_closes_that_users_open_sockets(student, stranger, run):
    theirs = await database_sync_to_async(Run.objects.create)(owner=stranger, status=Run.Status.RUNNING)
    mine, other = socket(student, f"/ws/runs/{run.pk}/"), socket(stranger, f"/ws/runs/{theirs.pk}/")
    for communicator in (mine, other):
        assert (await communicator.connect())[0]
        await communicator.receive_from(timeout=5)
    browser = Client()
    await database_sync_to_async(browser.force_login)(student)
    await database_sync_to_async(browser.post)("/logout/")
    assert await mine.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}
    assert await other.receive_nothing(timeout=0.2)  # another student's socket stays open
    await other.disconnect()


def session_socket(path, cookie: str | None, origin="http://testserver"):
    """A socket through the server's whole socket application, as a browser opens it."""
    from codefyui.routing import websocket_application
    headers = [(b"host", b"testserver"), (b"origin", origin.encode())]
    if cookie is not None:
        headers.append((b"cookie", f"sessionid={cookie}".encode()))
    return WebsocketCommunicator(websocket_application(), path, headers=headers)


async def test_a_browser_session_opens_the_socket_of_its_own_run_only(student, stranger, run):
    """The session's user is read from the browser's cookie: its own run's socket opens, another
    student's run, an unknown session and no cookie are refused."""
    theirs = await database_sync_to_async(Run.objects.create)(owner=stranger, status=Run.Status.RUNNING)
    browser = Client()
    await database_sync_to_async(browser.force_login)(student)
    cookie = browser.cookies["sessionid"].value
    mine = session_socket(f"/ws/runs/{run.pk}/", cookie)
    assert (await mine.connect())[0]
    assert 'id="run-status"' in await mine.receive_from(timeout=5)
    await mine.disconnect()
    for path, sent in ((f"/ws/runs/{theirs.pk}/", cookie), (f"/ws/runs/{run.pk}/", "not-a-session"),
                       (f"/ws/runs/{run.pk}/", None)):
        connected, code = await session_socket(path, sent).connect()
        assert not connected and code == 4404, (path, sent)
    connected, _ = await session_socket(f"/ws/runs/{run.pk}/", cookie, origin="http://evil.example").connect()
    assert not connected
