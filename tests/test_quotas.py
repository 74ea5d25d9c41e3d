"""What one student may keep on a shared server (CODEFYUI_MAX_GRAPHS_PER_USER,
CODEFYUI_MAX_TABS_PER_USER): every way a saved graph or an open tab comes in is refused past
the quota with a message that names it and says what to do, nothing is half made, and one
student's full quota never refuses another's. Runs are history: past
CODEFYUI_MAX_RUNS_PER_USER the oldest finished ones go."""
from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.editor import workspace
from apps.editor.models import Tab
from apps.graphs import document
from apps.graphs.models import Graph
from codefyui import conf

pytestmark = pytest.mark.django_db(transaction=True)

GRAPHS_FULL = ("You already keep 2 saved graphs, the most one student may keep (CODEFYUI_MAX_GRAPHS_PER_USER). "
               "Delete a graph you no longer need, then save again.")
TABS_FULL = ("You have 2 tabs open: one student may keep at most 2 open (CODEFYUI_MAX_TABS_PER_USER). "
             "Close tabs you no longer need, then try again.")


@pytest.fixture
def doc(walkthrough) -> dict:
    return document.normalise(walkthrough)


@pytest.fixture
def two_graphs_kept(monkeypatch, student, stranger, doc):
    monkeypatch.setattr(conf, "MAX_GRAPHS_PER_USER", 2)
    for name in ("a", "b"):
        Graph.objects.create(owner=student, name=name, document=doc)
    Graph.objects.create(owner=stranger, name="theirs", document=doc)


@pytest.fixture
def two_tabs_open(monkeypatch, student, doc):
    monkeypatch.setattr(conf, "MAX_TABS_PER_USER", 2)
    return [Tab.objects.create(owner=student, title=t, document=doc) for t in ("one", "two")]


def test_the_api_refuses_a_graph_past_the_quota(student_client, student, stranger, two_graphs_kept, walkthrough):
    answer = student_client.post("/api/graphs", json.dumps(walkthrough), content_type="application/json")
    assert answer.status_code == 409 and answer.json() == {"detail": GRAPHS_FULL}
    assert Graph.objects.filter(owner=student).count() == 2
    stored = Graph.objects.filter(owner=student).first()
    edited = student_client.put(f"/api/graphs/{stored.pk}", json.dumps(walkthrough), content_type="application/json")
    assert edited.status_code == 200   # changing a kept graph is never refused
    student_client.force_login(stranger)   # one graph of their own: room for one more
    assert student_client.post("/api/graphs", json.dumps(walkthrough), content_type="application/json").status_code == 201


def test_saving_a_tab_as_a_new_graph_past_the_quota_says_why_and_keeps_the_tab(student_client, student, two_graphs_kept, doc):
    tab = Tab.objects.create(owner=student, title="walk", document=doc)
    body = student_client.post(f"/editor/{tab.pk}/save", follow=True).content.decode()
    assert GRAPHS_FULL in body
    tab.refresh_from_db()
    assert tab.graph is None and Graph.objects.filter(owner=student).count() == 2


def test_importing_a_graph_file_past_the_quota_says_why(student_client, student, two_graphs_kept, walkthrough):
    upload = SimpleUploadedFile("w.json", json.dumps(walkthrough).encode())
    body = student_client.post("/graphs/import", {"file": upload}, follow=True).content.decode()
    assert GRAPHS_FULL in body and Graph.objects.filter(owner=student).count() == 2


@pytest.mark.parametrize("path, form", [("/editor/tabs/new", {}), ("/editor/tabs/example", {"example": "walkthrough"})])
def test_opening_a_tab_past_the_quota_says_why(student_client, student, two_tabs_open, path, form):
    body = student_client.post(path, form, follow=True).content.decode()
    assert TABS_FULL in body and Tab.objects.filter(owner=student).count() == 2


def test_opening_a_saved_graph_or_a_file_past_the_quota_says_why(student_client, student, two_tabs_open, doc, walkthrough):
    graph = Graph.objects.create(owner=student, name="g", document=doc)
    body = student_client.post("/editor/tabs/open", {"graph": graph.pk}, follow=True).content.decode()
    assert TABS_FULL in body
    upload = SimpleUploadedFile("w.json", json.dumps(walkthrough).encode())
    body = student_client.post("/editor/tabs/import", {"file": upload}, follow=True).content.decode()
    assert TABS_FULL in body and Tab.objects.filter(owner=student).count() == 2


def test_a_workspace_that_would_pass_the_quota_imports_no_tab(student_client, student, two_tabs_open, doc, monkeypatch):
    monkeypatch.setattr(conf, "MAX_TABS_PER_USER", 3)
    exported = json.dumps({"format": workspace.WORKSPACE_FORMAT, "tabs": [{"title": "x", "graph": doc}] * 2})
    upload = SimpleUploadedFile("w.cduiworkspace", exported.encode())
    body = student_client.post("/editor/tabs/import", {"file": upload}, follow=True).content.decode()
    assert ("w.cduiworkspace holds 2 tabs and you have 2 open: one student may keep at most 3 open "
            "(CODEFYUI_MAX_TABS_PER_USER). Close tabs you no longer need, then try again.") in body
    assert Tab.objects.filter(owner=student).count() == 2


def test_another_students_open_tabs_never_count(client, stranger, two_tabs_open):
    client.force_login(stranger)
    client.post("/editor/tabs/new")
    assert Tab.objects.filter(owner=stranger).count() == 1


def test_a_student_keeps_their_newest_runs_and_older_finished_ones_go_with_their_captures(student, stranger, monkeypatch, doc):
    from datetime import timedelta

    from django.utils import timezone

    from apps.runs import housekeeping, service
    from apps.runs.models import Run
    from apps.runs.store import get_store

    monkeypatch.setattr(conf, "MAX_RUNS_PER_USER", 3)
    now = timezone.now()

    def run(owner, minutes_ago, status=Run.Status.SUCCEEDED):
        made = Run.objects.create(owner=owner, status=status)
        Run.objects.filter(pk=made.pk).update(created=now - timedelta(minutes=minutes_ago))
        return made

    still_running = run(student, 100, Run.Status.RUNNING)   # the oldest, but never deleted
    old = [run(student, m) for m in (90, 80)]
    newest = [run(student, m) for m in (3, 2, 1)]
    for minutes_ago in (95, 85, 75, 65):
        run(stranger, minutes_ago)
    store = get_store()
    store.open_run(str(old[0].pk))
    store.put(str(old[0].pk), "n", "out", 1.0)
    store.close_run(str(old[0].pk))

    started = service.start_run(student, doc)   # what notes a student for the next sweep
    service.wait_for(started.pk)
    housekeeping.PRUNER.sweep()

    kept = set(Run.objects.filter(owner=student).values_list("pk", flat=True))
    assert kept == {still_running.pk, newest[1].pk, newest[2].pk, started.pk}
    assert not store.has_run(str(old[0].pk))
    assert Run.objects.filter(owner=stranger).count() == 4   # nobody noted them: not pruned
    assert housekeeping.prune_runs(stranger.pk) == 1
