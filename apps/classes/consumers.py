"""The class view's socket, /ws/classes/<id>/: a teacher's class page is told when a run of
one of its students starts or ends, and answers with the one fragment that makes htmx fetch
the table again (with the page's filter, which the socket's query string carries)."""
from __future__ import annotations

from functools import partial
from urllib.parse import parse_qs

from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string
from django.urls import reverse

from apps.accounts.roles import classes_of
from apps.runs import push
from codefyui.handler import in_turn

from . import live
from .board import FILTERS


def _teaches(user, class_id: int) -> bool:
    return classes_of(user).filter(pk=class_id).exists()


class ClassConsumer(AsyncWebsocketConsumer):
    groups_joined: tuple[str, ...] = ()

    async def connect(self):
        push.remember_loop()   # the in-memory layer's loop, which push.notify sends on
        user = self.scope.get("user")
        class_id = self.scope["url_route"]["kwargs"]["class_id"]
        if user is None or not user.is_authenticated or \
                not await in_turn(self.scope, partial(_teaches, user, class_id)):
            await self.close(code=4404)   # not their class, or not there: nothing is sent
            return
        show = parse_qs(self.scope.get("query_string", b"").decode("latin-1")).get("show", [""])[0]
        query = f"?show={show}" if show in FILTERS and show != "all" else ""
        self.table_url = reverse("classes:table", args=[class_id]) + query
        self.groups_joined = (live.group(class_id), push.user_group(user.pk))
        for name in self.groups_joined:
            await self.channel_layer.group_add(name, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        for name in self.groups_joined:
            await self.channel_layer.group_discard(name, self.channel_name)

    async def class_changed(self, message):
        await self.send(text_data=render_to_string("classes/_changed.html", {"url": self.table_url}))

    async def session_ended(self, message):
        """Its teacher logged out."""
        await self.close(code=4401)
