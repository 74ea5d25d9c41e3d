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


def test_a_bubble_goes_round_its_members_only():
    """Issue 49 item 4: the Reshape → Print bubble of a graph whose Start sits between them
    leaves Start out: one box per member, bridges only where no other card is in the way."""
    doc = document.normalise(example("walkthrough"))
    at = {"start": (300, 200), "reshape": (300, 0), "softmax": (300, 400), "print": (600, 400), "input": (0, 0)}
    for node in doc["nodes"]:
        node["position"] = {"x": float(at[node["id"]][0]), "y": float(at[node["id"]][1])}
    doc["segmentGroups"] = [{"id": "seg", "headNodeId": "reshape", "tailNodeId": "print"}]
    (bubble,) = layout(doc).bubbles
    start = next(c for c in layout(doc).cards if c.id == "start")
    inside = lambda box: box[0] <= start.x and start.x + 184 <= box[0] + box[2] and box[1] <= start.y <= box[1] + box[3]
    assert len(bubble.boxes) == 3 and not any(inside(b) for b in bubble.boxes + bubble.bridges)
    assert len(bubble.bridges) == 1   # softmax → print side by side; reshape ↓ softmax has Start between
