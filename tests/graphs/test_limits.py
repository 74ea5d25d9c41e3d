"""Graph size limits (CODEFYUI_MAX_GRAPH_NODES, CODEFYUI_MAX_GRAPH_MB): every way a graph
comes in or grows is refused past them, with the limit named, and nothing stored changes."""
from __future__ import annotations

import copy
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.graphs import document
from apps.editor.models import HistoryStep, Tab
from apps.graphs.models import Graph
from codefyui import conf

NODES_REFUSED = "The graph has 6 nodes; a graph can have at most 5 (CODEFYUI_MAX_GRAPH_NODES)."


@pytest.fixture
def five_nodes(monkeypatch):
    """The walkthrough has 5 nodes: exactly the limit."""
    monkeypatch.setattr(conf, "MAX_GRAPH_NODES", 5)


def with_extra_node(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    doc["nodes"].append({"id": "more", "type": "Softmax", "position": {"x": 0, "y": 0}, "data": {"params": {}}})
    return doc


def test_a_graph_at_the_limit_loads_and_one_past_it_is_refused_with_the_limit_named(walkthrough, five_nodes):
    assert len(document.normalise(walkthrough)["nodes"]) == 5
    with pytest.raises(document.DocumentError) as refused:
        document.normalise(with_extra_node(walkthrough))
    assert refused.value.problems == [NODES_REFUSED]


def test_nodes_inside_blocks_count(walkthrough, monkeypatch):
    block = {"id": "b", "type": "Subgraph", "position": {"x": 0, "y": 0}, "data": {"params": {"subgraph": {
        "nodes": [{"id": f"s{i}", "type": "Softmax", "data": {"params": {}}} for i in range(3)],
        "edges": [], "inputs": [], "outputs": []}}}}
    walkthrough["nodes"].append(block)
    monkeypatch.setattr(conf, "MAX_GRAPH_NODES", 8)
    with pytest.raises(document.DocumentError, match="has 9 nodes; a graph can have at most 8"):
        document.normalise(walkthrough)


def test_a_document_past_the_size_limit_is_refused_in_megabytes(walkthrough, monkeypatch):
    monkeypatch.setattr(conf, "MAX_GRAPH_MB", 1)
    walkthrough["description"] = "x" * (2**20 + 50_000)
    with pytest.raises(document.DocumentError) as refused:
        document.load(json.dumps(walkthrough))
    assert refused.value.problems == ["The graph is 1.1 MB; a graph can be at most 1 MB (CODEFYUI_MAX_GRAPH_MB)."]


# -- the ways in --------------------------------------------------------------------------

def upload(doc: dict, name: str = "big.json") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, json.dumps(doc).encode())


@pytest.mark.django_db(transaction=True)
def test_importing_a_graph_past_the_limit_says_why_and_adds_nothing(student_client, student, walkthrough, five_nodes):
    big = with_extra_node(walkthrough)
    home = student_client.post("/graphs/import", {"file": upload(big)}, follow=True).content.decode()
    editor = student_client.post("/editor/tabs/import", {"file": upload(big)}, follow=True).content.decode()
    for body in (home, editor):
        assert f"big.json could not be imported: {NODES_REFUSED}" in body
    workspace = {"format": "codefyui-workspace", "version": 1, "tabs": [{"title": "t", "graph": big}]}
    body = student_client.post("/editor/tabs/import", {"file": upload(workspace, "w.cduiworkspace")},
                               follow=True).content.decode()
    assert f"w.cduiworkspace, tab 1: {NODES_REFUSED}" in body
    assert not Graph.objects.exists() and not Tab.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_api_refuses_a_graph_past_the_limit_and_keeps_the_stored_one(student_client, student, walkthrough,
                                                                          five_nodes):
    stored = Graph.objects.create(owner=student, name="w", document=document.normalise(walkthrough))
    big = json.dumps(with_extra_node(walkthrough))
    for method, url in (("post", "/api/graphs"), ("put", f"/api/graphs/{stored.pk}")):
        answer = getattr(student_client, method)(url, big, content_type="application/json")
        assert answer.status_code == 400 and answer.json()["detail"] == NODES_REFUSED
    run = student_client.post("/api/runs", json.dumps({"graph": with_extra_node(walkthrough)}),
                              content_type="application/json")
    assert run.status_code == 400 and run.json()["problems"] == [NODES_REFUSED]
    stored.refresh_from_db()
    assert Graph.objects.count() == 1 and len(stored.document["nodes"]) == 5


@pytest.fixture
def tab(student, walkthrough):
    return Tab.objects.create(owner=student, title="walk", document=document.normalise(walkthrough))


@pytest.mark.django_db(transaction=True)
def test_an_edit_that_grows_the_graph_past_the_limit_is_refused_and_changes_nothing(student_client, tab, five_nodes):
    before = copy.deepcopy(tab.document)
    added = student_client.post(f"/editor/{tab.pk}/nodes/add", {"type": "Softmax"}, follow=True).content.decode()
    assert NODES_REFUSED in added
    collapsed = student_client.post(f"/editor/{tab.pk}/collapse", {"node": ["reshape", "softmax"]},
                                    follow=True).content.decode()  # a block is one more node
    assert NODES_REFUSED in collapsed
    tab.refresh_from_db()
    assert tab.document == before and not tab.history.exists()


@pytest.mark.django_db(transaction=True)
def test_a_graph_stored_before_the_limit_was_lowered_can_still_be_edited_down(student_client, tab, monkeypatch):
    monkeypatch.setattr(conf, "MAX_GRAPH_NODES", 3)
    student_client.post(f"/editor/{tab.pk}/nodes/reshape/move", {"x": "480", "y": "96"})
    student_client.post(f"/editor/{tab.pk}/nodes/delete", {"node": "softmax"})
    tab.refresh_from_db()
    assert tab.history.filter(kind=HistoryStep.UNDO).count() == 2 and len(tab.document["nodes"]) == 4


@pytest.mark.django_db(transaction=True)
def test_an_edit_that_grows_the_document_past_its_megabytes_is_refused(student_client, tab, monkeypatch):
    tab.document["description"] = "x" * 2**20  # stored when the limit was higher
    tab.save()
    monkeypatch.setattr(conf, "MAX_GRAPH_MB", 1)
    body = student_client.post(f"/editor/{tab.pk}/nodes/softmax/rename", {"label": "Probabilities"},
                               follow=True).content.decode()
    assert "a graph can be at most 1 MB (CODEFYUI_MAX_GRAPH_MB)" in body
    student_client.post(f"/editor/{tab.pk}/nodes/delete", {"node": "softmax"})  # smaller: allowed
    tab.refresh_from_db()
    assert tab.history.filter(kind=HistoryStep.UNDO).count() == 1 and "softmax" not in {n["id"] for n in tab.document["nodes"]}
