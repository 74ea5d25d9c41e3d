"""WebSocket routes, the check that a socket comes from a page of this server, and who a
socket belongs to: the user of the API token it brings (an `Authorization: Bearer` header or
a `token` query parameter), else the browser session's. A token socket skips the origin
check: that check stops another site's page from using a browser's cookies, and a token is
never sent by a browser on its own. Either way the user is read on Django's request thread
in the socket's turn among every request of the class (``handler.in_turn``)."""
from __future__ import annotations

from functools import partial
from types import SimpleNamespace
from urllib.parse import parse_qs

from channels.middleware import BaseMiddleware
from channels.routing import URLRouter
from channels.sessions import SessionMiddlewareStack
from channels.security.websocket import OriginValidator, WebsocketDenier
from django.conf import settings
from django.contrib import auth
from django.contrib.auth.models import AnonymousUser
from django.http.request import split_domain_port, validate_host
from django.urls import path, re_path

from apps.classes.consumers import ClassConsumer
from apps.runs.consumers import RunConsumer
from codefyui.api import token_backend
from codefyui.handler import in_turn

websocket_urlpatterns = [
    path("ws/runs/<uuid:run_id>/", RunConsumer.as_asgi()),
    path("ws/classes/<int:class_id>/", ClassConsumer.as_asgi()),
    re_path(r"", WebsocketDenier.as_asgi()),  # any other path (or run id spelling) is refused, never a 500
]


def own_origin(scope) -> str | None:
    """The origin of the pages that may open this socket: the scheme, host and port it was
    opened on (https when the connection or the school's proxy says so), if the host is
    an allowed one."""
    headers = dict(scope.get("headers", []))
    host = headers.get(b"host", b"").decode("latin1")
    if not host or not validate_host(split_domain_port(host)[0], settings.ALLOWED_HOSTS):
        return None
    secure = scope.get("scheme") == "wss"
    if settings.SECURE_PROXY_SSL_HEADER:
        name, value = settings.SECURE_PROXY_SSL_HEADER
        secure = secure or headers.get(name.removeprefix("HTTP_").replace("_", "-").lower().encode()) == value.encode()
    return f"{'https' if secure else 'http'}://{host}"


def same_origin(application):
    """Accept a WebSocket only when its Origin matches scheme, host and port of the socket's
    own origin or of one of CSRF_TRUSTED_ORIGINS (another port or scheme of the same host is
    another origin)."""
    async def validate(scope, receive, send):
        allowed = [*settings.CSRF_TRUSTED_ORIGINS, *filter(None, [own_origin(scope)])]
        return await OriginValidator(application, allowed)(scope, receive, send)
    return validate


def socket_token(scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization" and value.startswith(b"Bearer "):
            return value[7:].decode("latin-1").strip()
    found = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
    return found[0] if found else None


class TokenOrSession:
    def __init__(self, with_token, with_session):
        self.with_token, self.with_session = with_token, with_session

    async def __call__(self, scope, receive, send):
        token = socket_token(scope)
        if token is None:
            return await self.with_session(scope, receive, send)
        # the token backend itself: django-axes's backend, first in line, wants a request
        user = await in_turn(scope, partial(token_backend().authenticate, None, api_token=token))
        return await self.with_token({**scope, "user": user or AnonymousUser()}, receive, send)


class SessionUser(BaseMiddleware):
    """Channels' AuthMiddleware, but in turn: its own read of the session's user went to the
    request thread ahead of every student waiting there, so a class opening its editors (or
    a script opening sockets in a loop) pushed past the requests' round-robin turns."""

    async def __call__(self, scope, receive, send):
        # Django's get_user reads only request.session; the socket's session stands in.
        user = await in_turn(scope, partial(auth.get_user, SimpleNamespace(session=scope["session"])))
        return await super().__call__({**scope, "user": user}, receive, send)


def websocket_application():
    router = URLRouter(websocket_urlpatterns)
    return TokenOrSession(router, same_origin(SessionMiddlewareStack(SessionUser(router))))
