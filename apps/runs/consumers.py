"""The WebSocket of one run: its owner's editor receives small HTML fragments (a node's
badge, a log row, the run's status) with hx-swap-oob. On (re)connect it first receives the
run's whole current state, so a reconnect catches up on what it missed.

A student follows at most CODEFYUI_MAX_RUN_SOCKETS_PER_USER runs at once: each socket costs
the server a connection and renders every event of its run, so a page opened many times (or
a script's loop) would otherwise take the event loop from the whole class. The newest
sockets are kept; the oldest is told why in its log and closed."""
from __future__ import annotations

from collections import OrderedDict
from functools import partial

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string

from apps.graphs import subgraphs
from codefyui import conf
from codefyui.access import find_readable
from codefyui.handler import in_turn

from . import push, service
from .engine import events as ev
from .models import Run
from .status import badge, progress_line


class RunConsumer(AsyncWebsocketConsumer):
    async def dispatch(self, message):
        """Each message to its handler. Channels' own dispatch first closes stale database
        connections, on Django's one request thread, before every message: a hop there, ahead
        of every student's turn, for each event pushed to each open page. The database work
        here goes through ``in_turn``, which closes them around itself; an event needs none."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def connect(self):
        push.remember_loop()
        self.run_id = str(self.scope["url_route"]["kwargs"]["run_id"])  # the canonical spelling events use
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4404)
            return
        # A run this process runs or ran lately is known without the database (a page follows
        # the run it has just started); any other is looked up, in its turn: the owner's, or
        # for a teacher a student's (a look follows a run read-only: a socket only receives).
        run = service.known_run(user, self.run_id) or await in_turn(
            self.scope, partial(find_readable, Run.objects, user, self.run_id))
        if run is None:
            await self.close(code=4404)  # not yours, or not there: nothing is sent
            return
        await self.channel_layer.group_add(push.group(self.run_id), self.channel_name)
        await self.channel_layer.group_add(push.user_group(user.pk), self.channel_name)
        await self.accept()
        await self.send(text_data=await in_turn(self.scope, partial(catch_up, run)))
        for oldest in _followers.add(user.pk, self.channel_name):
            await self.channel_layer.send(oldest, {"type": "socket.evicted"})

    async def disconnect(self, code):
        await self.channel_layer.group_discard(push.group(self.run_id), self.channel_name)
        user = self.scope.get("user")
        if user is not None and user.is_authenticated:
            await self.channel_layer.group_discard(push.user_group(user.pk), self.channel_name)
            _followers.remove(user.pk, self.channel_name)

    async def socket_evicted(self, message):
        """Its user opened more sockets than they may keep, this one the longest ago."""
        limit = conf.MAX_RUN_SOCKETS_PER_USER
        await self.send(text_data=render_to_string("editor/_log_append.html", {"entry": {
            "level": "warning", "text": f"This page stopped following the run: you opened more than {limit} "
                                        f"pages that follow runs (CODEFYUI_MAX_RUN_SOCKETS_PER_USER is {limit}). "
                                        "Reload it to follow the run again."}}))
        await self.close(code=EVICTED)

    async def session_ended(self, message):
        """Its user logged out: nothing more is streamed to this page."""
        await self.close(code=4401)

    async def run_events(self, message):
        """Events of the run (push.publish), as one frame: each event's badge, bar or log row,
        in order, then the run's status once, as the newest of them says it (the page's script
        reads a frame's first status: a run that starts and ends within one frame must not
        read as still running)."""
        events = message["events"]
        html = "".join(fragment(event) for event in events)
        inner = [event["node_id"] for event in events if "/" in (event.get("node_id") or "")]
        if inner:  # nodes inside a block: its block's card shows the rolled-up status,
            # from what this process holds of the run: events of inner nodes must not each
            # take a turn on Django's one request thread (a preset is a block of many)
            statuses = service.node_states(self.run_id)
            if statuses is None:
                statuses = await in_turn(self.scope, partial(_row_states, self.run_id))
            html += block_badges(inner, statuses)
        html += run_status(events)
        # the log panel's heading counts its rows; a frame of progress bars alone adds none
        if any(event["kind"] != ev.PROGRESS for event in events) and (count := service.log_length(self.run_id)) is not None:
            html += render_to_string("editor/_log_count.html", {"count": count, "oob": True})
        if html:
            await self.send(text_data=html)


EVICTED = 4429   # a close code htmx's ws extension does not reconnect after


class _Followers:
    """Each user's open run sockets in this process, oldest first. Touched on the event loop
    only (connect and disconnect), so it needs no lock."""

    def __init__(self) -> None:
        self._open: dict[int, OrderedDict[str, None]] = {}

    def add(self, user_pk: int, channel: str) -> list[str]:
        """Count a new socket; the channels of the oldest ones past the limit."""
        sockets = self._open.setdefault(user_pk, OrderedDict())
        sockets[channel] = None
        past = max(0, len(sockets) - max(1, conf.MAX_RUN_SOCKETS_PER_USER))
        return [sockets.popitem(last=False)[0] for _ in range(past)]

    def remove(self, user_pk: int, channel: str) -> None:
        sockets = self._open.get(user_pk)
        if sockets is not None:
            sockets.pop(channel, None)
            if not sockets:
                del self._open[user_pk]


_followers = _Followers()


def fragment(event: dict) -> str:
    """The HTML an event becomes, but for the run's status (``run_status``): a node's badge or
    progress bar and/or a log row, each with hx-swap-oob."""
    kind, node_id = event["kind"], event.get("node_id")
    parts = []
    if kind == ev.PROGRESS:  # the card's bar; a node inside a block has no card of its own, and
        bar = progress_line(event.get("data"))  # progress that is no count (LLMChat's text) has no bar
        return "" if "/" in (node_id or "") or bar is None else render_to_string("editor/_progress.html", {
            "node_id": node_id, "progress": bar, "oob": True})
    if node_id and kind.startswith("node_"):
        status = {"status": kind.removeprefix("node_"), "error": event.get("error")}
        parts.append(render_to_string("editor/_badge.html", {"card": _Card(node_id, status), "oob": True}))
    entry = ev.log_entry(ev.Event(**{k: v for k, v in event.items() if k in ev.Event.__dataclass_fields__}))
    if entry:
        parts.append(render_to_string("editor/_log_append.html", {"entry": entry}))
    return "".join(parts)


def run_status(events: list[dict]) -> str:
    """The run's status as the newest of these events that changes it says, or nothing."""
    changes = [event for event in events if event["kind"] == ev.RUN_STARTED or event["kind"] in ev.TERMINAL
               or "paused" in (event.get("data") or {})]   # paused for a stand-in worker, or resumed
    if not changes:
        return ""
    event = changes[-1]
    status = ev.TERMINAL_STATUS.get(event["kind"], "running")
    return render_to_string("editor/_run_status.html", {"run": _RunView(status, event), "oob": True})


def _row_states(run_id: str) -> dict[str, dict]:
    return service.current(Run.objects.get(pk=run_id)).nodes or {}


def block_badges(inner_ids: list[str], statuses: dict[str, dict]) -> str:
    """Badges of the blocks holding these inner nodes, rolled up from the run's node statuses."""
    blocks = {node_id.split("/", 1)[0] for node_id in inner_ids if "/" in node_id}
    return "".join(render_to_string("editor/_badge.html", {
        "card": _Card(block, subgraphs.rolled_up_status(block, statuses)), "oob": True}) for block in sorted(blocks))


def catch_up(run: Run) -> str:
    """Everything the page should show for the run now (after a (re)connect)."""
    run = service.current(run)  # what the recorder holds beyond what was read
    parts = [render_to_string("editor/_badge.html", {"card": _Card(node_id, status), "oob": True})
             for node_id, status in run.nodes.items() if "/" not in node_id]
    parts.append(block_badges(list(run.nodes), run.nodes))
    parts.append(render_to_string("editor/_log.html", {"run": run, "oob": True}))
    parts.append(render_to_string("editor/_log_count.html", {"count": len(run.log or []), "oob": True}))
    parts.append(render_to_string("editor/_run_status.html", {"run": run, "oob": True}))
    return "".join(parts)


class _Card:
    def __init__(self, node_id: str, status: dict):
        self.id, self.status, self.badge = node_id, status, badge(status)


class _RunView:
    """Enough of a Run for _run_status.html, from an event."""

    def __init__(self, status: str, event: dict):
        self.status, self.error = status, event.get("error") or ""
        data = event.get("data") or {}
        self.device, self.paused = data.get("device", ""), data.get("paused", False)

    def get_status_display(self) -> str:
        return self.status.capitalize()
