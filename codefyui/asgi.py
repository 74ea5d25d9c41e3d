"""ASGI entry point: HTTP through Django, WebSockets through Channels' URL router; start-up
marks runs a previous process left unfinished and starts the run workers. The server that
serves it is codefyui/serve.py's."""
import gc
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "codefyui.settings")

import django  # noqa: E402

django.setup(set_prefix=False)

from codefyui.handler import SyncStackASGIHandler  # noqa: E402

django_application = SyncStackASGIHandler()

from channels.routing import ProtocolTypeRouter  # noqa: E402

from apps.runs.api import wait_for_runs  # noqa: E402
from codefyui.routing import websocket_application  # noqa: E402


def _recover_runs() -> None:
    """Runs a previous server process left running can never finish: mark them interrupted."""
    from django.db.utils import DatabaseError

    from apps.runs.housekeeping import mark_interrupted_runs
    try:
        mark_interrupted_runs()
    except DatabaseError:  # not migrated yet; `manage.py migrate` first
        pass


def _start_run_workers() -> None:
    """Runs execute in a supervised pool of worker processes that lives as long as this server."""
    from apps.runs.service import start_workers
    start_workers()


def _settle_heap() -> None:
    """Put what start-up built (Django, torch, every view: about 250,000 objects) beyond
    the cyclic garbage collector. Otherwise each full collection walks all of it, and under
    load that pause (about 100 ms on a 2-core VM) lands on every request in flight: with
    30 students at once it was the p95 of bench/inspector_render.py. Reference counting
    still frees these objects; only cycles among them would stay."""
    from django.urls import get_resolver

    from apps.runs.engine import warm_up

    get_resolver().url_patterns  # import every view now, so that it is settled too
    warm_up()                    # and what the engine's element limit loads on first use
    gc.collect()
    gc.freeze()


_recover_runs()
_start_run_workers()

application = ProtocolTypeRouter({
    "http": wait_for_runs(django_application),
    "websocket": websocket_application(),
})

_settle_heap()
