"""Blocks in the editor: collapse, run, enter, inner captures, From the block's input, undo."""
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


@pytest.fixture
def collapsed(student_client, tab):
    student_client.post(f"/editor/{tab.pk}/collapse", {"node": ["reshape", "softmax"]})
    tab.refresh_from_db()
    return next(n["id"] for n in tab.document["nodes"] if n["type"] == "Subgraph")


def run(client, tab, student):
    client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    return service.wait_for(Run.objects.filter(owner=student).first().pk)


def test_collapse_is_one_undo_step(student_client, tab, collapsed):
    assert {n["id"] for n in tab.document["nodes"]} == {"start", "input", "print", collapsed}
    student_client.post(f"/editor/{tab.pk}/undo")
    tab.refresh_from_db()
    assert {n["id"] for n in tab.document["nodes"]} == {"start", "input", "reshape", "softmax", "print"}


def test_a_block_runs_and_its_ports_show_what_crossed_them(student_client, tab, student, collapsed):
    finished = run(student_client, tab, student)
    assert finished.status == "succeeded", finished.error
    body = student_client.get(f"/editor/{tab.pk}/?node={collapsed}&run={finished.pk}").content.decode()
    assert "shape [1, 4, 4]" in body and "shape [1, 16]" in body  # in: TensorInput's output; out: the inner softmax
    assert 'id="badge-' + collapsed + '" class="badge badge-completed"' in body  # rolled up


def test_inside_a_block_nodes_show_captures_and_boundary_inputs(student_client, tab, student, collapsed):
    """IN17: inside an open subgraph, a node shows what it captured once the run ended; an input
    coming in through the block reads "From the block's input"; the cards show no run status."""
    finished = run(student_client, tab, student)
    body = student_client.get(f"/editor/{tab.pk}/?inside={collapsed}&run={finished.pk}&node={collapsed}/reshape").content.decode()
    assert "← Main graph" in body and "From the block&#x27;s input" in body
    assert "shape [1, 16]" in body
    assert "badge-completed" not in body.split('id="canvas"')[1].split("</section>")[0]


def test_inside_a_running_block_rows_wait_for_the_whole_run(student_client, tab, student, collapsed):
    running = Run.objects.create(owner=student, status=Run.Status.RUNNING, options={"record": True},
                                 nodes={f"{collapsed}/reshape": {"status": "completed"}})
    body = student_client.get(f"/editor/{tab.pk}/?inside={collapsed}&run={running.pk}&node={collapsed}/softmax").content.decode()
    assert "Graph is running…" in body


def test_node_details_of_a_block_lists_its_boundary_ports(student_client, tab, collapsed):
    """ND4: Subgraph instances only: the block's boundary ports and an Enter subgraph button."""
    body = student_client.get(f"/editor/{tab.pk}/details/{collapsed}/?pane=subgraph").content.decode()
    assert ">Subgraph<" in body and "input <code>tensor</code> → reshape.tensor" in body and "Enter subgraph" in body
    assert ">Subgraph<" not in student_client.get(f"/editor/{tab.pk}/details/input/").content.decode()


def test_expand_puts_the_block_back(student_client, tab, collapsed):
    student_client.post(f"/editor/{tab.pk}/nodes/{collapsed}/expand")
    tab.refresh_from_db()
    assert {n["id"] for n in tab.document["nodes"]} == {"start", "input", "reshape", "softmax", "print"}
