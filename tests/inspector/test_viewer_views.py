"""The full-size viewers' cards and their pages without JavaScript (issue 17, reference §14)."""
from __future__ import annotations

import html
import re

import pytest

from apps.editor.models import Tab
from apps.graphs import document
from apps.runs import service
from apps.runs.models import Run
from apps.runs.store import get_store
from tests.conftest import example

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tab(student):
    return Tab.objects.create(owner=student, title="viewers", document=document.normalise(example("attention-viewers")))


@pytest.fixture
def finished(student_client, tab, student, fresh_store):
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    run = service.wait_for(Run.objects.get(owner=student).pk)
    assert run.status == "succeeded", run.error
    return run


def get(client, url):
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return html.unescape(response.content.decode())


def test_smoke(student_client, tab, finished):
    body = get(student_client, f"/editor/{tab.pk}/?run={finished.pk}")
    open("/tmp/viewers-editor.html", "w").write(body)
    for node in ("heatmap", "mha", "mask", "scatter"):
        page = get(student_client, f"/editor/{tab.pk}/viewer/{node}/?run={finished.pk}")
        open(f"/tmp/viewers-{node}.html", "w").write(page)
