"""Engine events -> the channel-layer group of their run, from the run's thread.

The in-memory channel layer belongs to the server's event loop, so events are handed to
that loop (captured when the first WebSocket connects); a Redis layer is safe to call from
any thread. Pushed messages carry status only, never tensor data. A logout tells that
user's sockets to close.
"""
from __future__ import annotations

import asyncio
import logging

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
    _send(group(event.run_id), {"type": "run.event", "event": event.to_dict()})


def close_sockets(sender, user=None, **kwargs) -> None:
    """On logout (a user_logged_out receiver): that user's open sockets close."""
    if user is not None:
        _send(user_group(user.pk), {"type": "session.ended"})


def _send(to: str, message: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    if isinstance(layer, InMemoryChannelLayer):
        if _loop is None or _loop.is_closed() or not layer.groups.get(to):
            return  # nobody listens (a run submitted through the API): no hop to the loop
        asyncio.run_coroutine_threadsafe(layer.group_send(to, message), _loop)
    else:
        try:
            async_to_sync(layer.group_send)(to, message)
        except Exception:
            log.exception("could not push to %s", to)
