"""Segments: head and tail, path sets, inputs and outputs, markers that undo with their focus."""
from __future__ import annotations

import pytest

from apps.graphs import document, edits, segments
from apps.editor.models import Tab


def graph(edges, xs=None):
    ids = sorted({n for e in edges for n in e})
    xs = xs or {n: i * 100 for i, n in enumerate(ids)}
    return document.normalise({
        "nodes": [{"id": n, "type": "Add", "position": {"x": xs[n], "y": 0}} for n in ids],
        "edges": [{"id": f"{a}-{b}-{i}", "source": a, "sourceHandle": "tensor", "target": b,
                   "targetHandle": "tensor_a" if i % 2 == 0 else "tensor_b"} for i, (a, b) in enumerate(edges)]})


def test_the_node_further_left_is_the_head():
    """IN19: the one further left on the canvas is the head, the other the tail."""
    doc = graph([("a", "b")], xs={"a": 300, "b": 10})
    assert segments.head_and_tail(doc, "a", "b") == ("b", "a")


def test_a_chain_keeps_every_node_between():
    doc = graph([("a", "b"), ("b", "c"), ("c", "d")])
    assert segments.path_set(doc, "a", "c") == {"a", "b", "c"}


def test_rejoining_branches_stay_and_side_branches_drop():
    doc = graph([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("b", "side")])
    assert segments.path_set(doc, "a", "d") == {"a", "b", "c", "d"}


def test_disconnected_nodes_have_no_path_and_head_equals_tail_is_itself():
    doc = graph([("a", "b"), ("c", "d")])
    assert segments.path_set(doc, "a", "d") == set()
    assert segments.path_set(doc, "a", "a") == {"a"}


def test_no_path_creates_nothing():
    """IN20: "Segment: no path from head to tail", nothing created."""
    doc = graph([("a", "b"), ("c", "d")])
    with pytest.raises(edits.EditError, match="^Segment: no path from head to tail$"):
        edits.create_segment(doc, "a", "d")


def test_segment_inputs_are_every_edge_entering_the_set():
    """IN18: Segment inputs (N): every edge entering the head-to-tail set."""
    doc = graph([("x", "b"), ("a", "b"), ("b", "c"), ("y", "c")])
    entering = segments.entering_edges(doc, segments.path_set(doc, "a", "c"))
    assert sorted((e["source"], e["target"]) for e in entering) == [("x", "b"), ("y", "c")]


def test_markers_are_saved_with_the_graph_json(walkthrough):
    """ST4: segment markers are saved with the graph JSON."""
    doc, seg = edits.create_segment(document.normalise(walkthrough), "print", "reshape")
    assert document.load(document.dumps(doc))["segmentGroups"] == [
        {"id": seg, "headNodeId": "reshape", "tailNodeId": "print"}]


@pytest.mark.django_db
def test_creating_and_clearing_a_marker_are_undoable_steps_with_their_focus(student, walkthrough):
    """ST5, ST6, IN21: a new segment is active; undo brings back a cleared one, active again."""
    tab = Tab.objects.create(owner=student, title="t", document=document.normalise(walkthrough))
    doc, seg = edits.create_segment(tab.document, "reshape", "print")
    tab.apply(doc, seg)
    assert tab.active_segment == seg
    tab.apply(edits.remove_segment(tab.document, seg))
    assert tab.active_segment == "" and tab.document["segmentGroups"] == []
    tab.undo()
    assert tab.active_segment == seg and len(tab.document["segmentGroups"]) == 1
    tab.redo()
    assert tab.active_segment == "" and tab.document["segmentGroups"] == []


@pytest.mark.django_db
def test_deleting_the_tail_swallows_the_marker_and_undo_brings_it_back_active(student, walkthrough):
    """ST6: Ctrl+Z brings back a marker that Delete swallowed, together with the focus it had."""
    tab = Tab.objects.create(owner=student, title="t", document=document.normalise(walkthrough))
    doc, seg = edits.create_segment(tab.document, "reshape", "print")
    tab.apply(doc, seg)
    tab.apply(edits.delete_nodes(tab.document, {"print"}))
    assert tab.document["segmentGroups"] == [] and tab.active_segment == ""
    tab.undo()
    assert "print" in {n["id"] for n in tab.document["nodes"]} and tab.active_segment == seg
    assert len(tab.document["edges"]) == 4
