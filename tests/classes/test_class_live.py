"""The class view live: a class page's socket is told when a student's run starts or ends,
and answers with the fragment that fetches the table again (with the page's filter)."""

import pytest
from channels.db import database_sync_to_async
from channels.layers import channel_layers
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from apps.classes import live
from apps.runs.engine import events as ev
from apps.runs.models import Run
from codefyui.routing import same_origin, websocket_urlpatterns

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


def socket(user, path: str) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(same_origin(URLRouter(websocket_urlpatterns)), path,
                                         headers=[(b"host", b"testserver"), (b"origin", b"http://testserver")])
    communicator.scope["user"] = user
    return communicator


async def test_a_students_run_that_ends_makes_the_class_page_fetch_its_table(teacher, classroom, pupils):
    run = await database_sync_to_async(Run.objects.create)(owner=pupils[0], status=Run.Status.FAILED)
    page = socket(teacher, f"/ws/classes/{classroom.pk}/?show=failed")
    assert (await page.connect(timeout=5))[0]
    await database_sync_to_async(live.run_changed)(ev.Event(kind=ev.RUN_FAILED, run_id=str(run.pk)))
    fragment = await page.receive_from(timeout=5)
    assert f'hx-get="/classes/{classroom.pk}/table?show=failed"' in fragment and 'hx-swap-oob="true"' in fragment
    await database_sync_to_async(live.run_changed)(ev.Event(kind=ev.LOG, run_id=str(run.pk), text="hi"))
    assert await page.receive_nothing(timeout=0.2)   # a log line is no change of status
    await page.disconnect()


async def test_a_run_of_no_class_tells_no_class_page(teacher, classroom, student):
    run = await database_sync_to_async(Run.objects.create)(owner=student, status=Run.Status.SUCCEEDED)
    page = socket(teacher, f"/ws/classes/{classroom.pk}/")
    assert (await page.connect(timeout=5))[0]
    await database_sync_to_async(live.run_changed)(ev.Event(kind=ev.RUN_COMPLETED, run_id=str(run.pk)))
    assert await page.receive_nothing(timeout=0.2)
    await page.disconnect()
