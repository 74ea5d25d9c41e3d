"""Where things sit on the canvas: segment bubbles and edge shapes (issue 13 items 15, 16)."""
from __future__ import annotations

from apps.editor.canvas import PICTURE_H, layout
from apps.graphs import document
from tests.conftest import example


def test_a_bubble_never_runs_off_the_canvas_under_the_sidebar():
    """Item 15: a segment round a node at the canvas's top-left corner keeps its bubble and
    HEAD badge on the canvas."""
    doc = document.normalise(example("walkthrough"))
    next(n for n in doc["nodes"] if n["id"] == "input")["position"] = {"x": 0.0, "y": 0.0}
    doc["segmentGroups"] = [{"id": "seg", "headNodeId": "input", "tailNodeId": "softmax"}]
    (bubble,) = layout(doc, active_segment="seg").bubbles
    assert (bubble.x, bubble.y, bubble.head_badge) == (0.0, 0.0, (0.0, 0.0))


def test_edges_know_their_ends_and_pictured_cards_are_taller():
    """Item 16: each edge names its source port and target (for its shape and the connections
    list); a card with a picture grows by the picture's height."""
    doc = document.normalise(example("walkthrough"))
    plain, pictured = layout(doc), layout(doc, pictured=frozenset({"softmax"}))
    edge = next(e for e in plain.edges if e.source == "reshape")
    assert (edge.port, edge.target, edge.label) == ("tensor", "softmax", "Reshape.tensor → Softmax.tensor")
    height = {c.id: c.h for c in plain.cards}
    assert {c.id: c.h for c in pictured.cards} == {**height, "softmax": height["softmax"] + PICTURE_H}
