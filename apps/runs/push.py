"""Engine events -> the channel-layer group of their run, from the run's thread.

The in-memory channel layer belongs to the server's event loop, so events are handed to
that loop (captured when the first WebSocket connects); a Redis layer is safe to call from
any thread. Pushed messages carry status only, never tensor data.
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


def remember_loop() -> None:
    """Called from a consumer: the loop that owns the in-memory channel layer."""
    global _loop
    _loop = asyncio.get_running_loop()


def publish(event: Event) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "run.event", "event": event.to_dict()}
    if isinstance(layer, InMemoryChannelLayer):
        if _loop is None or _loop.is_closed():
            return  # nobody has ever connected in this process: nobody to tell
        asyncio.run_coroutine_threadsafe(layer.group_send(group(event.run_id), message), _loop)
    else:
        try:
            async_to_sync(layer.group_send)(group(event.run_id), message)
        except Exception:
            log.exception("could not push an event of run %s", event.run_id)
