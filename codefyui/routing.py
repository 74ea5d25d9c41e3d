"""WebSocket routes, and who a socket belongs to: the user of the API token it brings
(an `Authorization: Bearer` header or a `token` query parameter), else the browser session's.
A token socket skips the origin check: that check stops another site's page from using a
browser's cookies, and a token is never sent by a browser on its own."""
from urllib.parse import parse_qs

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.contrib.auth import authenticate
from django.contrib.auth.models import AnonymousUser
from django.urls import path

from apps.runs.consumers import RunConsumer

websocket_urlpatterns = [
    path("ws/runs/<str:run_id>/", RunConsumer.as_asgi()),
]


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
        user = await database_sync_to_async(authenticate)(None, api_token=token)  # apps.accounts.backends
        return await self.with_token({**scope, "user": user or AnonymousUser()}, receive, send)


def websocket_application():
    router = URLRouter(websocket_urlpatterns)
    return TokenOrSession(router, AllowedHostsOriginValidator(AuthMiddlewareStack(router)))
