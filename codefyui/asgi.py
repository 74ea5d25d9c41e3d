"""ASGI entry point: HTTP through Django, WebSockets through Channels' URL router."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "codefyui.settings")

import django  # noqa: E402

django.setup(set_prefix=False)

from codefyui.handler import SyncStackASGIHandler  # noqa: E402

django_application = SyncStackASGIHandler()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from codefyui.routing import websocket_urlpatterns  # noqa: E402


def _recover_runs() -> None:
    """Runs a previous server process left running can never finish: mark them interrupted."""
    from django.db.utils import DatabaseError

    from apps.runs.service import mark_interrupted_runs
    try:
        mark_interrupted_runs()
    except DatabaseError:  # not migrated yet; `manage.py migrate` first
        pass


_recover_runs()

application = ProtocolTypeRouter({
    "http": django_application,
    "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
})
