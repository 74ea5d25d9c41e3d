"""The class view, live: when a student's run starts or ends, the pages of their class are
told (a ``class.changed`` message to the class's channel-layer group) and fetch their table
again. The runs app knows nothing of classes: this module listens to every run's events
(``service.add_listener``) and looks the run's class up itself."""
from __future__ import annotations

import logging

from channels.layers import InMemoryChannelLayer, get_channel_layer

from apps.runs import push
from apps.runs.engine import events as ev
from apps.runs.models import Run

log = logging.getLogger("codefyui.classes")


PREFIX = "class-"


def group(class_id: int) -> str:
    return f"{PREFIX}{class_id}"


def _anyone_following() -> bool:
    """Whether any class page may listen: with the in-memory layer, one of this process's class
    groups has a socket (else no run needs its class looked up); a Redis layer's pages may be in
    another process, so then every started or ended run is looked up."""
    layer = get_channel_layer()
    if isinstance(layer, InMemoryChannelLayer):
        return any(name.startswith(PREFIX) and sockets for name, sockets in list(layer.groups.items()))
    return layer is not None


def run_changed(event: ev.Event) -> None:
    """A run listener (on a run's reader thread): a started or ended run tells its owner's class."""
    if event.kind != ev.RUN_STARTED and event.kind not in ev.TERMINAL or not _anyone_following():
        return
    try:
        class_id = (Run.objects.filter(pk=event.run_id)
                    .values_list("owner__enrolment__classroom_id", flat=True).first())
    except Exception:   # a listener never breaks a run
        log.exception("could not find the class of run %s", event.run_id)
        return
    if class_id is not None:
        push.notify(group(class_id), {"type": "class.changed"})
