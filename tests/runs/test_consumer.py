"""The run WebSocket: only the owner receives a run's progress, as hx-swap-oob fragments;
a (re)connect first catches up on everything so far."""
from __future__ import annotations

import asyncio
import threading

import pytest
from channels.db import database_sync_to_async
from channels.layers import channel_layers
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from apps.runs import service
from apps.runs.models import Run
from codefyui.routing import websocket_urlpatterns

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    from apps.runs import consumers
    channel_layers.backends.clear()
    consumers._followers = consumers._Followers()
    yield
    channel_layers.backends.clear()


def socket(user, run_id):
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{run_id}/")
    communicator.scope["user"] = user
    return communicator


async def receive_until(communicator, text, timeout=10.0):
    """Everything received until a message containing ``text``."""
    seen = ""
    deadline = asyncio.get_running_loop().time() + timeout
    while text not in seen:
        left = deadline - asyncio.get_running_loop().time()
        assert left > 0, f"never received {text!r}; got {seen[-500:]!r}"
        seen += await communicator.receive_from(timeout=left)
    return seen


async def test_the_owner_receives_every_node_as_it_finishes(student, walkthrough):
    run = await database_sync_to_async(Run.objects.create)(owner=student, status=Run.Status.QUEUED)
    communicator = socket(student, run.pk)
    connected, _ = await communicator.connect()
    assert connected
    await communicator.receive_from(timeout=5)  # the catch-up of a run that has not started
    # Start the real run under the id the socket watches.
    planned = service.plan(walkthrough)
    options = service.run_options(walkthrough)
    await database_sync_to_async(service._enqueue)(run, planned, options)
    seen = await receive_until(communicator, "Run succeeded")
    for node in ("start", "input", "reshape", "softmax", "print"):
        assert f'id="badge-{node}" class="badge badge-completed" hx-swap-oob="true" role="status">Completed<' in seen
    assert 'hx-swap-oob="beforeend:#log"' in seen and "[probabilities]" in seen
    await communicator.disconnect()


async def test_another_users_run_sends_nothing(student, stranger):
    run = await database_sync_to_async(Run.objects.create)(owner=student, status=Run.Status.RUNNING)
    communicator = socket(stranger, run.pk)
    connected, code = await communicator.connect()
    assert not connected and code == 4404


async def test_an_anonymous_visitor_is_refused(student):
    from django.contrib.auth.models import AnonymousUser
    run = await database_sync_to_async(Run.objects.create)(owner=student)
    connected, _ = await socket(AnonymousUser(), run.pk).connect()
    assert not connected


async def test_a_reconnect_catches_up_on_what_it_missed(student):
    run = await database_sync_to_async(Run.objects.create)(
        owner=student, status=Run.Status.FAILED, error="reshape failed",
        nodes={"input": {"status": "completed"}, "reshape": {"status": "error", "error": "16 values cannot be reshaped to [-1, 784]"}},
        log=[{"node": "print", "text": "[x] 1", "level": "info"}])
    communicator = socket(student, run.pk)
    await communicator.connect()
    snapshot = await communicator.receive_from(timeout=5)
    assert 'id="badge-input" class="badge badge-completed" hx-swap-oob="true"' in snapshot
    assert "Error: 16 values cannot be reshaped to [-1, 784]" in snapshot
    assert '<ol id="log" class="log" aria-live="polite" aria-label="Execution Log" hx-swap-oob="true">' in snapshot and "[x] 1" in snapshot
    assert "Run failed" in snapshot and "reshape failed" in snapshot
    await communicator.disconnect()


async def test_a_malformed_run_id_is_refused(student):
    connected, _ = await socket(student, "not-a-uuid").connect()
    assert not connected


async def test_a_block_shows_the_rolled_up_status_of_its_inside(student):
    """Nodes inside a block have no card: the block's badge speaks for them."""
    run = await database_sync_to_async(Run.objects.create)(
        owner=student, status=Run.Status.RUNNING,
        nodes={"block-1/a": {"status": "completed"}, "block-1/b": {"status": "running"}})
    communicator = socket(student, run.pk)
    await communicator.connect()
    snapshot = await communicator.receive_from(timeout=5)
    assert 'id="badge-block-1" class="badge badge-running"' in snapshot and "badge-block-1/a" not in snapshot
    await communicator.disconnect()


async def _inner_event_shows(student, run, statuses_held: dict | None, monkeypatch) -> str:
    """What a socket on the run receives for an error inside block-1, with ``statuses_held``
    as this process's recorder of the run (None: the process does not run it, and the socket
    may read the row on Django's request thread; otherwise it must not)."""
    from apps.runs import consumers
    from types import SimpleNamespace

    from apps.runs import push
    from apps.runs.engine import events as ev
    communicator = socket(student, run.pk)
    await communicator.connect()
    await communicator.receive_from(timeout=5)   # the catch-up
    if statuses_held is not None:
        live = service._LiveRun(run, SimpleNamespace(run_id=str(run.pk)), None)
        live.recorder.nodes = statuses_held
        service._runs.live[str(run.pk)] = live

        async def no_request_thread(scope, work):
            raise AssertionError(f"{work} went to the request thread")
        monkeypatch.setattr(consumers, "in_turn", no_request_thread)
    try:
        event = ev.Event(ev.NODE_ERROR, str(run.pk), "block-1/b", error="x", level="error")
        push.publish(event)
        return await receive_until(communicator, 'id="badge-block-1"')
    finally:
        service._runs.live.pop(str(run.pk), None)
        await communicator.disconnect()


async def test_an_event_inside_a_block_rolls_its_badge_up_from_what_the_server_holds(student, monkeypatch):
    """Every event of a node inside a block (a preset is a block of many) rolls the block's
    badge up from the run as this process holds it, not from its row: no read on Django's
    one request thread per event."""
    run = await database_sync_to_async(Run.objects.create)(
        owner=student, status=Run.Status.RUNNING, nodes={"block-1/a": {"status": "running"}})
    seen = await _inner_event_shows(student, run, {"block-1/a": {"status": "completed"}, "block-1/b": {"status": "error"}},
                                    monkeypatch)
    assert 'id="badge-block-1" class="badge badge-error"' in seen


async def test_an_event_inside_a_block_of_a_run_this_process_does_not_hold_reads_its_row(student, monkeypatch):
    run = await database_sync_to_async(Run.objects.create)(
        owner=student, status=Run.Status.RUNNING, nodes={"block-1/a": {"status": "running"}})
    seen = await _inner_event_shows(student, run, None, monkeypatch)
    assert 'id="badge-block-1" class="badge badge-running"' in seen


async def test_an_event_reaches_the_page_without_a_hop_onto_the_request_thread(student, monkeypatch):
    """A pushed event is rendered on the event loop only. Channels' own dispatch first closed
    stale database connections on Django's one request thread before every message: a hop
    there for each event of each open page, ahead of every student's turn."""
    from channels import consumer as channels_consumer

    from apps.runs import push
    from apps.runs.engine import events as ev
    run = await database_sync_to_async(Run.objects.create)(owner=student, status=Run.Status.RUNNING)
    communicator = socket(student, run.pk)
    await communicator.connect()
    await communicator.receive_from(timeout=5)   # the catch-up

    async def no_hop():
        raise AssertionError("a hop onto the request thread")
    monkeypatch.setattr(channels_consumer, "aclose_old_connections", no_hop)
    event = ev.Event(ev.NODE_COMPLETED, str(run.pk), "print", level="success", summary={})
    push.publish(event)
    seen = await receive_until(communicator, 'id="badge-print"')
    assert 'class="badge badge-completed"' in seen
    await communicator.disconnect()


async def test_a_page_following_the_run_it_started_connects_without_reading_the_database(student, monkeypatch):
    """The run the page has just started is one this process runs: the socket finds it, and
    catches up on it, from what the process holds; only another run is looked up."""
    from types import SimpleNamespace

    from apps.runs import consumers
    run = await database_sync_to_async(Run.objects.create)(owner=student, status=Run.Status.RUNNING)
    live = service._LiveRun(run, SimpleNamespace(run_id=str(run.pk)), None)
    live.recorder.nodes = {"conv": {"status": "completed"}}
    service._runs.live[str(run.pk)] = live

    def no_lookup(*args):
        raise AssertionError("the run was looked up in the database")
    monkeypatch.setattr(consumers, "find_readable", no_lookup)
    monkeypatch.setattr(Run.objects, "get", no_lookup)
    try:
        communicator = socket(student, run.pk)
        connected, _ = await communicator.connect()
        assert connected
        assert 'id="badge-conv" class="badge badge-completed"' in await communicator.receive_from(timeout=5)
        await communicator.disconnect()
    finally:
        service._runs.live.pop(str(run.pk), None)


async def test_events_taken_in_together_reach_the_page_as_one_frame_in_order(student):
    """A worker's batch brings a run's events together: the page receives those its run's
    reader took in while the event loop was busy as one frame, in their order."""
    from apps.runs import push
    from apps.runs.engine import events as ev
    run = await database_sync_to_async(Run.objects.create)(owner=student, status=Run.Status.RUNNING)
    communicator = socket(student, run.pk)
    await communicator.connect()
    await communicator.receive_from(timeout=5)   # the catch-up
    for node in ("conv", "relu", "pool"):   # the loop is busy here: all three wait for it
        push.publish(ev.Event(ev.NODE_COMPLETED, str(run.pk), node, level="success", summary={}))
    frame = await communicator.receive_from(timeout=5)
    assert frame.index('id="badge-conv"') < frame.index('id="badge-relu"') < frame.index('id="badge-pool"')
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.disconnect()


async def test_a_run_that_starts_and_ends_within_one_frame_reads_as_ended(student):
    """A frame carries the run's status once, as its newest event says it: the page's script
    reads a frame's first status, and re-renders the editor only for a finished run."""
    from apps.runs import push
    from apps.runs.engine import events as ev
    run = await database_sync_to_async(Run.objects.create)(owner=student, status=Run.Status.QUEUED)
    communicator = socket(student, run.pk)
    await communicator.connect()
    await communicator.receive_from(timeout=5)   # the catch-up
    push.publish(ev.Event(ev.RUN_STARTED, str(run.pk), data={"device": "cpu"}))
    push.publish(ev.Event(ev.NODE_COMPLETED, str(run.pk), "print", level="success", summary={}))
    push.publish(ev.Event(ev.RUN_COMPLETED, str(run.pk), level="success"))
    frame = await communicator.receive_from(timeout=5)
    assert frame.count('id="run-status"') == 1 and 'class="run-status status-succeeded"' in frame
    await communicator.disconnect()


async def test_the_log_panels_count_follows_the_rows_pushed_to_it(student):
    """The Execution Log's heading counts its rows: a frame that appends rows says how many the
    run has now (it read 0 beside ten streamed rows), and so does a (re)connect's catch-up."""
    from types import SimpleNamespace

    from apps.runs import push
    from apps.runs.engine import events as ev
    run = await database_sync_to_async(Run.objects.create)(
        owner=student, status=Run.Status.RUNNING, log=[{"node": "", "text": "Execution started", "level": "info"}])
    communicator = socket(student, run.pk)
    await communicator.connect()
    assert '<span id="log-count" class="count" hx-swap-oob="true">1</span>' in await communicator.receive_from(timeout=5)
    live = service._LiveRun(run, SimpleNamespace(run_id=str(run.pk)), None)
    live.recorder.log = [{"text": f"row {i}"} for i in range(4)]
    service._runs.live[str(run.pk)] = live
    try:
        push.publish(ev.Event(ev.LOG, str(run.pk), "print", text="[x] 1"))
        frame = await communicator.receive_from(timeout=5)
        assert "[x] 1" in frame and '<span id="log-count" class="count" hx-swap-oob="true">4</span>' in frame
    finally:
        service._runs.live.pop(str(run.pk), None)
        await communicator.disconnect()


async def test_more_events_at_once_than_a_channel_holds_all_reach_the_page(student):
    """A graph of a hundred quick nodes makes its events faster than the page takes them in:
    sent one message each, those past the channel's capacity (100) were dropped, the run's
    end with them, and the page said Running… for ever."""
    from apps.runs import push
    from apps.runs.engine import events as ev
    run = await database_sync_to_async(Run.objects.create)(owner=student, status=Run.Status.RUNNING)
    communicator = socket(student, run.pk)
    await communicator.connect()
    await communicator.receive_from(timeout=5)   # the catch-up
    for i in range(150):
        push.publish(ev.Event(ev.NODE_COMPLETED, str(run.pk), f"n{i}", level="success", summary={}))
    push.publish(ev.Event(ev.RUN_COMPLETED, str(run.pk), level="success"))
    seen = await receive_until(communicator, "Run succeeded")
    assert all(f'id="badge-n{i}"' in seen for i in range(150))
    await communicator.disconnect()


def token_socket(path, headers=()):
    from codefyui.routing import websocket_application
    return WebsocketCommunicator(websocket_application(), path, headers=list(headers))


async def test_a_script_with_an_api_token_may_watch_its_own_run(student, stranger):
    """The socket accepts the API token as a Bearer header or a token query parameter, without an Origin."""
    from apps.accounts.models import ApiToken
    run = await database_sync_to_async(Run.objects.create)(owner=student, status=Run.Status.SUCCEEDED)
    token = await database_sync_to_async(ApiToken.issue)(student)
    strangers = await database_sync_to_async(ApiToken.issue)(stranger)
    for communicator in (token_socket(f"/ws/runs/{run.pk}/", [(b"authorization", f"Bearer {token}".encode())]),
                         token_socket(f"/ws/runs/{run.pk}/?token={token}")):
        connected, _ = await communicator.connect()
        assert connected
        assert "Run succeeded" in await communicator.receive_from(timeout=5)
        await communicator.disconnect()
    for wrong in ("nope", strangers):
        connected, code = await token_socket(f"/ws/runs/{run.pk}/?token={wrong}").connect()
        assert not connected and code == 4404


async def test_a_student_follows_a_bounded_number_of_runs_the_newest_kept(student, stranger, monkeypatch):
    """Sockets past CODEFYUI_MAX_RUN_SOCKETS_PER_USER close the student's oldest, which is told why
    in its log; another student's sockets neither count nor close."""
    from codefyui import conf
    monkeypatch.setattr(conf, "MAX_RUN_SOCKETS_PER_USER", 2)
    mine = [await database_sync_to_async(Run.objects.create)(owner=student, status=Run.Status.SUCCEEDED)
            for _ in range(3)]
    theirs = await database_sync_to_async(Run.objects.create)(owner=stranger, status=Run.Status.SUCCEEDED)
    other = socket(stranger, theirs.pk)
    assert (await other.connect())[0]
    await other.receive_from(timeout=5)
    opened = []
    for run in mine:
        communicator = socket(student, run.pk)
        assert (await communicator.connect())[0]
        assert "Run succeeded" in await communicator.receive_from(timeout=5)
        opened.append(communicator)
    told = await opened[0].receive_from(timeout=5)
    assert 'hx-swap-oob="beforeend:#log"' in told and 'class="log-warning"' in told
    assert ("This page stopped following the run: you opened more than 2 pages that follow runs "
            "(CODEFYUI_MAX_RUN_SOCKETS_PER_USER is 2). Reload it to follow the run again.") in told
    assert (await opened[0].receive_output(timeout=5)) == {"type": "websocket.close", "code": 4429}
    for communicator in (*opened[1:], other):
        assert await communicator.receive_nothing(timeout=0.2)
    await opened[1].disconnect()  # a closed page frees its place: the next one closes nothing
    again = socket(student, mine[1].pk)
    assert (await again.connect())[0]
    await again.receive_from(timeout=5)
    assert await opened[2].receive_nothing(timeout=0.2)
    for communicator in (opened[2], again, other):
        await communicator.disconnect()


async def test_with_a_redis_layer_a_runs_events_go_in_order_from_a_thread_of_their_own(monkeypatch):
    """A layer other than the in-memory one (Redis, scaled out) is called from one thread of
    its own, never the run's reader, and events that come while a send is under way go
    together: all of them, in order, in far fewer messages than events."""
    from apps.runs import push
    from apps.runs.engine import events as ev
    sent, threads, gate = [], set(), threading.Event()

    class Layer:
        async def group_send(self, to, message):
            threads.add(threading.current_thread().name)
            gate.wait(5)   # a slow Redis: what comes meanwhile waits, together
            sent.append((to, message))

    monkeypatch.setattr(push, "get_channel_layer", lambda: Layer())
    for i in range(150):
        push.publish(ev.Event(ev.NODE_COMPLETED, "r1", f"n{i}", level="success"))
    gate.set()
    push._REDIS_SENDS.submit(lambda: None).result(5)   # everything handed over before it has gone
    events = [e["node_id"] for to, message in sent for e in message["events"]]
    assert events == [f"n{i}" for i in range(150)] and len(sent) <= 3
    assert {to for to, _ in sent} == {"run-r1"} and threading.current_thread().name not in threads


async def test_a_run_paused_for_a_stand_in_reads_paused_then_running_again():
    """A pause's and a resume's log events change the run status the page shows (workers.PAUSED)."""
    from apps.runs.consumers import run_status
    from apps.runs.engine import events as ev
    started = {"kind": ev.RUN_STARTED, "data": {"device": "cpu"}}
    paused = {"kind": ev.LOG, "text": "Paused: …", "data": {"paused": True, "device": "cpu"}}
    resumed = {"kind": ev.LOG, "text": "Resumed after 3 s paused", "data": {"paused": False, "device": "cpu"}}
    assert "Paused for others…" in run_status([started, paused])
    assert "Running on cpu…" in run_status([paused, resumed])
    assert run_status([{"kind": ev.LOG, "text": "a line", "data": None}]) == ""
