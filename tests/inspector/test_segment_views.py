"""Segments in the editor: create, the bubble, the Inspector's segment view, remove, clear."""
from __future__ import annotations

import pytest

from apps.graphs import document
from apps.editor.models import Tab
from apps.runs import service
from apps.runs.models import Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tab(student, walkthrough):
    return Tab.objects.create(owner=student, title="walk", document=document.normalise(walkthrough))


def test_create_segment_wraps_the_path_in_a_bubble_and_the_inspector_shows_it(student_client, tab, student):
    """WK11, IN18, IN21: the Inspector focuses on the head's input and the tail's output; HEAD/TAIL badges."""
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    run = service.wait_for(Run.objects.get(owner=student).pk)
    student_client.post(f"/editor/{tab.pk}/segments/create", {"node": ["print", "reshape"]})
    tab.refresh_from_db()
    assert tab.active_segment == "seg-reshape-print"
    body = student_client.get(f"/editor/{tab.pk}/?run={run.pk}").content.decode()
    assert 'class="bubble active"' in body and ">HEAD</span>" in body and ">TAIL</span>" in body
    assert "SEGMENT</span> Reshape → Print" in body
    assert "Segment inputs (1)" in body and "→ Reshape.tensor" in body and "Segment outputs (1)" in body
    assert "shape [1, 4, 4]" in body and 'class="changed"' not in body  # no heat in a segment


def test_exactly_two_nodes_are_needed(student_client, tab):
    """IN19, SP10: Create segment needs exactly two selected nodes."""
    body = student_client.post(f"/editor/{tab.pk}/segments/create", {"node": ["reshape"]}, follow=True).content.decode()
    assert "Create segment needs exactly two selected nodes." in body


def test_no_path_is_refused_with_the_seeds_text(student_client, tab):
    """IN20: no data path from head to tail: nothing created."""
    body = student_client.post(f"/editor/{tab.pk}/segments/create", {"node": ["print", "start"]}, follow=True).content.decode()
    assert "Segment: no path from head to tail" in body
    tab.refresh_from_db()
    assert tab.document["segmentGroups"] == []


def test_several_segments_the_x_removes_one_and_clear_active_clears_the_shown_one(student_client, tab):
    """IN22: several segments coexist; × removes only that one; Clear active clears the highlighted one."""
    student_client.post(f"/editor/{tab.pk}/segments/create", {"node": ["input", "reshape"]})
    student_client.post(f"/editor/{tab.pk}/segments/create", {"node": ["softmax", "print"]})
    tab.refresh_from_db()
    assert len(tab.document["segmentGroups"]) == 2 and tab.active_segment == "seg-softmax-print"
    student_client.post(f"/editor/{tab.pk}/segments/seg-input-reshape/activate")
    tab.refresh_from_db()
    assert tab.active_segment == "seg-input-reshape"
    student_client.post(f"/editor/{tab.pk}/segments/clear")
    tab.refresh_from_db()
    assert [g["id"] for g in tab.document["segmentGroups"]] == ["seg-softmax-print"]
    student_client.post(f"/editor/{tab.pk}/segments/seg-softmax-print/remove")
    tab.refresh_from_db()
    assert tab.document["segmentGroups"] == []


def test_undo_after_deleting_the_tail_brings_back_node_edges_and_active_marker(student_client, tab):
    """ST6: Delete the tail, then Undo: node, edges and the active marker come back."""
    student_client.post(f"/editor/{tab.pk}/segments/create", {"node": ["reshape", "print"]})
    student_client.post(f"/editor/{tab.pk}/nodes/delete", {"node": "print"})
    student_client.post(f"/editor/{tab.pk}/undo")
    tab.refresh_from_db()
    assert tab.active_segment == "seg-reshape-print" and len(tab.document["edges"]) == 4
