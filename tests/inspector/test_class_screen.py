"""What a class sees in the editor page after a run (issue 13 §2), rendered on the server."""
from __future__ import annotations

import re

import pytest

from apps.editor.models import Tab
from apps.runs import service
from apps.runs.models import Run
from tests.inspector.test_inspector_views import finished, page, tab  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_right_hand_column_opens_on_the_node_before_a_run_and_on_the_inspector_after(student_client, tab, finished):
    """Item 7: the node's parameters and the Inspector share one column as tabs."""
    before = page(student_client, tab, "node=softmax")
    assert 'class="side-tab current" aria-current="page">Node<' in before and "Apply parameters" in before
    assert 'aria-label="Node Softmax"' in before and "Inspector Softmax" not in before
    after = page(student_client, tab, f"node=softmax&run={finished.pk}")
    assert 'class="side-tab current" aria-current="page">Forward<' in after and 'aria-label="Node Softmax"' not in after
    node_tab = page(student_client, tab, f"node=softmax&run={finished.pk}&view=node")
    assert 'aria-label="Node Softmax"' in node_tab and 'class="port-row' not in node_tab


def test_after_a_run_every_edge_shows_its_shape_and_every_card_a_picture(student_client, tab, finished):
    """Item 16: the shape that crossed each edge, and a server-drawn picture of each output."""
    body = page(student_client, tab, f"run={finished.pk}")
    shapes = re.findall(r'<span class="edge-shape[^"]*"[^>]*>([^<]+)</span>', body)
    assert sorted(shapes) == sorted(["[1, 4, 4]", "[1, 16]", "[1, 16]"])
    titles = re.findall(r'<svg class="card-picture"[^>]*aria-label="([^"]+)"', body)
    assert len(titles) == 4  # TensorInput, Reshape, Softmax, Print (Start has no data output)
    assert "Heat map of the output [1, 4, 4], slice [0, :, :]: from -2 to 3" in titles
    assert sum(t.startswith("Line of the output [1, 16]") for t in titles) == 3
    assert "edge-shape" not in page(student_client, tab, "")  # before a run: nothing to show


def test_the_inspector_says_which_run_it_reads_and_the_way_back_to_the_latest(student_client, tab, finished, student):
    """Item 11: after Runs -> Inspect on an older run."""
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    latest = service.wait_for(Run.objects.filter(owner=student).exclude(pk=finished.pk).get().pk)
    response = student_client.post(f"/editor/runs/{finished.pk}/open", {"_tab": tab.pk})
    assert response.status_code == 302
    body = page(student_client, tab, f"node=softmax&run={finished.pk}")
    assert "Reading the run of " in body and "An older run." in body
    assert re.search(rf'hx-get="[^"]*\?node=softmax&amp;run={latest.pk}[^"]*">Show the latest run</a>', body)
    assert "An older run." not in page(student_client, tab, f"node=softmax&run={latest.pk}")
    assert Tab.objects.get(pk=tab.pk).last_run_id == latest.pk


def test_connections_of_the_selected_node_are_a_list_with_what_flowed(student_client, tab, finished):
    """Item 14: edges reachable by keyboard and named: the node panel lists its connections."""
    body = page(student_client, tab, f"node=reshape&run={finished.pk}&view=node")
    section = body.split('id="links-title"')[1].split("</section>")[0]
    assert "TensorInput.tensor → Reshape.tensor" in section and "Reshape.tensor → Softmax.tensor" in section
    assert 'aria-label="What flowed through Reshape.tensor → Softmax.tensor"' in section
    assert f"/editor/{tab.pk}/edges/" in section


def test_names_not_ids_where_people_read(student_client, tab, finished):
    """Item 10: Starts execution at, and the Execution Log, name nodes by their names."""
    body = page(student_client, tab, f"node=start&run={finished.pk}&view=node")
    starts = body.split('id="trigger-title"')[1].split("</section>")[0]
    assert "<li>TensorInput" in starts and "<li>input" not in starts
    log = body.split('id="log"')[1].split("</ol>")[0]
    assert ">Reshape</span> Node Reshape completed" in log


def test_the_home_page_offers_the_blank_graph_and_the_lessons(student_client):
    """Item 12: the first page after login is one click from a blank graph or a lesson."""
    body = student_client.get("/").content.decode()
    assert "New blank graph" in body and "Softmax walkthrough" in body and 'name="example"' in body
