"""While a tab's run is going, its Run button is Stop, and a Run posted meanwhile (a second
quick click, a stale page) starts nothing: five clicks start one training, not five."""
from __future__ import annotations

import pytest

from apps.editor.models import Tab
from apps.graphs import document
from apps.runs.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(student, walkthrough):
    tab = Tab.objects.create(owner=student, title="Walkthrough", document=document.normalise(walkthrough))
    tab.last_run = Run.objects.create(owner=student, status=Run.Status.RUNNING, origin=tab.origin)
    tab.save()
    return tab


def toolbar_buttons(page: str) -> list[str]:
    toolbar = page.split('class="toolbar', 1)[1].split('class="workbench', 1)[0]
    return [b.split(">", 1)[1].split("<", 1)[0] for b in toolbar.split("<button")[1:]]


def test_while_the_tabs_run_goes_run_is_stop(student_client, running):
    buttons = toolbar_buttons(student_client.get(f"/editor/{running.pk}/?run={running.last_run_id}").content.decode())
    assert "Stop" in buttons and "Run" not in buttons


def test_a_run_posted_while_the_tabs_run_goes_starts_nothing_and_says_why(student_client, running):
    answer = student_client.post(f"/editor/{running.pk}/run", {"device": "follow"}, follow=True)
    assert Run.objects.count() == 1
    assert "This tab&#x27;s run is still going: stop it with Stop, or wait until it ends, then run again." \
        in answer.content.decode()


def test_once_the_run_has_ended_run_is_back(student_client, running):
    Run.objects.filter(pk=running.last_run_id).update(status=Run.Status.SUCCEEDED)
    buttons = toolbar_buttons(student_client.get(f"/editor/{running.pk}/?run={running.last_run_id}").content.decode())
    assert "Run" in buttons and "Stop" not in buttons


@pytest.mark.parametrize("chosen, after", [("training", "training"), ("backward", "backward"), ("node", ""), ("", "")])
def test_run_keeps_the_inspector_tab_the_student_chose(student_client, student, walkthrough, chosen, after):
    """A new run opens on the Inspector; a tab of it the student chose (Training's live curve) stays."""
    tab = Tab.objects.create(owner=student, title="Walkthrough", document=document.normalise(walkthrough))
    answer = student_client.post(f"/editor/{tab.pk}/run", {"device": "follow", "_state": f"node=softmax&view={chosen}"})
    query = answer.url.split("?", 1)[1]
    assert ("view=" + after in query) if after else ("view=" not in query)
    assert "node=softmax" in query and "run=" in query

