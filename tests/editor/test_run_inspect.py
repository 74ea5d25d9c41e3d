"""Runs → Inspect shows a run only on the graph it ran: the tab it was started from, else a tab
of its saved graph (or a new one); a run of a closed, never-saved tab is shown nowhere else,
and the student is told so. A run named in another tab's address is not painted on it."""
from __future__ import annotations

import pytest

from apps.editor.models import Tab
from apps.graphs import document
from apps.graphs.models import Graph
from apps.runs.models import Run

pytestmark = pytest.mark.django_db


def doc(name: str) -> dict:
    return document.normalise({"name": name, "nodes": [{"id": "start", "type": "Start", "position": {"x": 0, "y": 0}}],
                               "edges": []})


@pytest.fixture
def tabs(student):
    digits = Tab.objects.create(owner=student, title="Digits", document=doc("Digits"), position=1)
    attention = Tab.objects.create(owner=student, title="Attention", document=doc("Attention"), position=2)
    return digits, attention


def finished(student, tab=None, graph=None) -> Run:
    return Run.objects.create(owner=student, status=Run.Status.SUCCEEDED, graph=graph,
                              origin=tab.origin if tab else "", log=[{"text": "attention's own line", "level": "info"}],
                              nodes={"start": {"status": "completed"}})


def inspect(client, run, from_tab):
    return client.post(f"/editor/runs/{run.pk}/open", {"_tab": from_tab.pk})


def test_inspect_from_another_tab_opens_the_tab_the_run_was_started_in(student_client, student, tabs):
    digits, attention = tabs
    run = finished(student, tab=attention)
    assert inspect(student_client, run, digits).url == f"/editor/{attention.pk}/?run={run.pk}"


def test_inspect_of_a_saved_graphs_run_opens_a_tab_of_that_graph(student_client, student, tabs):
    digits, _ = tabs
    graph = Graph.objects.create(owner=student, name="Saved attention", document=doc("Saved attention"))
    run = finished(student, graph=graph)
    answer = inspect(student_client, run, digits)
    opened = Tab.objects.get(graph=graph)
    assert answer.url == f"/editor/{opened.pk}/?run={run.pk}" and opened.title == "Saved attention"
    assert inspect(student_client, run, digits).url == answer.url   # the same tab, not another one


def test_inspect_of_a_run_whose_tab_is_closed_and_graph_unsaved_says_it_cannot(student_client, student, tabs):
    digits, attention = tabs
    run = finished(student, tab=attention)
    attention.delete()
    page = student_client.get(inspect(student_client, run, digits).url).content.decode()
    assert "That run was started in a tab that is closed now, and its graph was never saved" in page
    assert "attention&#x27;s own line" not in page and "attention's own line" not in page


def test_a_run_of_another_tab_named_in_the_address_is_not_painted_on_this_one(student_client, student, tabs):
    digits, attention = tabs
    run = finished(student, tab=attention)
    assert "attention&#x27;s own line" not in student_client.get(f"/editor/{digits.pk}/?run={run.pk}").content.decode()
    assert "attention&#x27;s own line" in student_client.get(f"/editor/{attention.pk}/?run={run.pk}").content.decode()


def test_a_run_started_in_a_tab_records_that_tab(student_client, student, tabs, walkthrough):
    digits, _ = tabs
    digits.document = document.normalise(walkthrough)
    digits.save()
    student_client.post(f"/editor/{digits.pk}/run", {"device": "follow"})
    assert Run.objects.get().origin == f"tab:{digits.pk}"
