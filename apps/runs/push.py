"""Engine events -> the channel-layer group of their run, from the run's thread.

The in-memory channel layer belongs to the server's event loop, so events are handed to
that loop (captured when the first WebSocket connects); a Redis layer is called from one
thread of its own, so a run's reader never waits on Redis. Pushed messages carry status
only, never tensor data. A logout tells that user's sockets to close.

A run's events that come while its last delivery is still on its way go together, in order,
as one message (``run.events``). A worker's batch brings a run's events a dozen or a few
hundred at a time, and one message each cost the event loop a wake-up, a task, a socket's
dispatch and a frame each; worse, a channel holds 100 messages, and a graph of a hundred
quick nodes overflowed it: the layer dropped the rest, the run's end with them, and the page
said Running… for ever.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

from .engine.events import Event

log = logging.getLogger("codefyui.push")
_loop: asyncio.AbstractEventLoop | None = None


def group(run_id: str) -> str:
    return f"run-{run_id}"


def user_group(user_id: int) -> str:
    """Every open socket of one user (so that logging out closes them)."""
    return f"user-{user_id}"


def remember_loop() -> None:
    """Called from a consumer: the loop that owns the in-memory channel layer."""
    global _loop
    _loop = asyncio.get_running_loop()


def publish(event: Event) -> None:
    """Push an event to the sockets following its run."""
    to = group(event.run_id)
    if not _listened(to):
        return
    with _waiting_lock:
        waiting = _waiting.setdefault(to, [])
        waiting.append(event.to_dict())
        first = len(waiting) == 1
    if first:   # no delivery of this group's is on its way: one goes, with whatever joins it meanwhile
        _hand_over(lambda: _deliver(to))


def close_sockets(sender, user=None, **kwargs) -> None:
    """On logout (a user_logged_out receiver): that user's open sockets close."""
    if user is None:
        return
    to = user_group(user.pk)
    if _listened(to):
        _hand_over(lambda: _group_send(to, {"type": "session.ended"}))


def notify(to: str, message: dict) -> None:
    """Send one message to a group's sockets if anyone listens there (from any thread): how
    other apps tell their own sockets about a run, e.g. a class page that one of its
    students' runs changed status."""
    if _listened(to):
        _hand_over(lambda: _group_send(to, message))


_waiting: dict[str, list[dict]] = {}   # group -> its events not yet handed to the layer
_waiting_lock = threading.Lock()
_REDIS_SENDS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="run-push")   # one: in order


def _listened(to: str) -> bool:
    layer = get_channel_layer()
    if layer is None:
        return False
    if isinstance(layer, InMemoryChannelLayer):   # nobody listens (a run submitted through the API): no hop to the loop
        return _loop is not None and not _loop.is_closed() and bool(layer.groups.get(to))
    return True   # a Redis layer's groups span processes: only it knows


def _hand_over(send) -> None:
    """Run ``send`` where the layer may be called: on the event loop, or the Redis thread."""
    if isinstance(get_channel_layer(), InMemoryChannelLayer):
        _loop.call_soon_threadsafe(send)
    else:
        _REDIS_SENDS.submit(send)


def _deliver(to: str) -> None:
    with _waiting_lock:
        events = _waiting.pop(to, [])
    if events:
        _group_send(to, {"type": "run.events", "events": events})


def _group_send(to: str, message: dict) -> None:
    layer = get_channel_layer()
    if isinstance(layer, InMemoryChannelLayer):
        asyncio.ensure_future(layer.group_send(to, message))
        return
    try:
        async_to_sync(layer.group_send)(to, message)
    except Exception:
        log.exception("could not push to %s", to)
