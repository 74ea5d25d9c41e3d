"""WebSocket routes, and the check that a socket comes from a page of this server."""
from __future__ import annotations

from channels.security.websocket import OriginValidator, WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.urls import path, re_path

from apps.runs.consumers import RunConsumer

websocket_urlpatterns = [
    path("ws/runs/<uuid:run_id>/", RunConsumer.as_asgi()),
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
