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


# Class pages open in this process (ClassConsumer counts them, on the event loop). With the
# in-memory layer none open means no run needs its class looked up; a Redis layer's pages may
# be in another process, so then every started or ended run is looked up.
pages_open = 0


def group(class_id: int) -> str:
    return f"class-{class_id}"


def _anyone_following() -> bool:
    layer = get_channel_layer()
    return layer is not None and (pages_open > 0 or not isinstance(layer, InMemoryChannelLayer))


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
