"""The Inspector in the editor page, its row fragment, Node details and the edge summary."""
from __future__ import annotations

import pytest

from apps.graphs import document
from apps.editor.models import Tab
from apps.runs import housekeeping, service
from apps.runs.models import Run
from apps.runs.store import StoreUnreachable

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tab(student, walkthrough):
    return Tab.objects.create(owner=student, title="walk", document=document.normalise(walkthrough))


@pytest.fixture
def finished(student_client, tab, student):
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    return service.wait_for(Run.objects.get(owner=student).pk)


def page(client, tab, query):
    return client.get(f"/editor/{tab.pk}/?{query}").content.decode()


def test_before_any_run_every_row_reads_nothing_captured(student_client, tab):
    """IN7, IN2: a selected node shows Forward, Steps and Backward; with no run, Nothing captured yet."""
    body = page(student_client, tab, "node=softmax&view=forward")
    assert body.count("Nothing captured yet") == 2
    for name in (">Forward<", ">Steps<", ">Backward<"):
        assert name in body


def test_softmax_is_heat_coloured(student_client, tab, finished):
    """WK9, IN4: on Softmax (same shape in and out) changed cells are heat-coloured."""
    body = page(student_client, tab, f"node=softmax&run={finished.pk}")
    assert body.count('class="changed"') == 16
    assert "Inputs (1)" in body and "Outputs (1)" in body and "Reshape.tensor" in body
    assert body.index("Reshape.tensor") < body.index("Outputs (1)")  # inputs above outputs


def test_reshape_shows_the_shape_change_instead_of_heat(student_client, tab, finished):
    """WK10, IN4: on Reshape the divider shows [1, 4, 4] → [1, 16]."""
    body = page(student_client, tab, f"node=reshape&run={finished.pk}")
    assert '<span class="shape-chip" aria-label="Shape changes: [1, 4, 4] → [1, 16]">[1, 4, 4] → [1, 16]</span>' in body
    assert 'class="changed"' not in body


def test_a_tensor_row_shows_meta_and_values(student_client, tab, finished):
    """WK8, IN3: shape, dtype, min/max/mean and the values, with a type-coloured dot."""
    body = page(student_client, tab, f"node=input&run={finished.pk}")
    assert "shape [1, 4, 4] · float32 · min -2 · max 3 · mean 0.4688" in body
    assert '<span class="dot" data-type="TENSOR" title="TENSOR">' in body  # green: editor/palette.css
    assert "dim 0" in body and "<td>0.5</td>" in body


def test_choosing_a_slice_re_renders_one_row(student_client, tab, finished):
    response = student_client.get(f"/editor/{tab.pk}/inspect/input/row",
                                  {"run": finished.pk, "node": "input", "key": "out.tensor", "s.out.tensor": "0"})
    assert response.status_code == 200 and response.content.decode().count("<article") == 1


@pytest.mark.parametrize("junk", ["9" * 5000, "²", "abc", "1e9", "-"])
def test_a_junk_slice_or_window_shows_the_first_one(student_client, tab, finished, junk):
    """A hand-edited URL with a number nobody could mean reads as the default slice and window."""
    response = student_client.get(f"/editor/{tab.pk}/inspect/input/row", {
        "run": finished.pk, "node": "input", "key": "out.tensor", "s.out.tensor": junk, "o.out.tensor": f"{junk},{junk}"})
    assert response.status_code == 200 and "showing the grid at dim 0 = 0" in response.content.decode()


def test_a_failed_node_and_the_ones_after_it(student_client, tab, student):
    """IN14, IN15: Failed in the last run; Not in the last run for the nodes it stopped."""
    tab.document["nodes"][2]["data"]["params"] = {}
    tab.save()
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    run = service.wait_for(Run.objects.get(owner=student).pk)
    assert "Failed in the last run" in page(student_client, tab, f"node=reshape&run={run.pk}")
    assert page(student_client, tab, f"node=softmax&run={run.pk}").count("Not in the last run") == 1
    assert "Failed in the last run" in page(student_client, tab, f"node=softmax&run={run.pk}")  # its input


def test_an_expired_run(student_client, tab, finished, fresh_store):
    """IN10: the run was evicted or deleted: Run data expired — re-run to capture."""
    fresh_store.drop_run(str(finished.pk))
    assert "Run data expired — re-run to capture" in page(student_client, tab, f"node=softmax&run={finished.pk}")


def test_record_off_asks_for_the_setting_then_invites_a_run(student_client, tab, student):
    """IN12, WK12: a run with Record node outputs off captured nothing."""
    REC = "record_outputs,verbose_internals"
    student_client.post(f"/editor/{tab.pk}/settings", {"_keys": REC})  # every box unchecked: recording off
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    run = service.wait_for(Run.objects.get(owner=student).pk)
    assert "turn on Record node outputs" in page(student_client, tab, f"node=softmax&run={run.pk}")
    student_client.post(f"/editor/{tab.pk}/settings", {"_keys": REC, "record_outputs": "on"})
    assert "Run the graph to capture its values" in page(student_client, tab, f"node=softmax&run={run.pk}")


def test_rows_wait_while_the_run_has_not_reached_them(student_client, tab, student):
    """IN8, IN9: Waiting for this node to run… / Node is running… / Graph is running…, re-fetched by themselves."""
    run = Run.objects.create(owner=student, status=Run.Status.RUNNING, options={"record": True},
                             nodes={"input": {"status": "completed"}, "reshape": {"status": "running"}})
    body = page(student_client, tab, f"node=softmax&run={run.pk}")
    assert "Node is running…" in body and "Waiting for this node to run…" in body
    assert 'hx-trigger="node-finished" data-waits-for="reshape"' in body
    assert "Graph is running…" in page(student_client, tab, f"node=softmax&run={run.pk}&view=backward")


def test_a_worker_that_cannot_be_reached(student_client, tab, finished, fresh_store, monkeypatch):
    """IN11: while the store holding the run is away, each row says so, and is read again next time."""
    def away(*args):
        raise StoreUnreachable()
    monkeypatch.setattr(fresh_store, "get", away)
    assert "The worker that holds this run&#x27;s recorded outputs cannot be reached now" in page(
        student_client, tab, f"node=softmax&run={finished.pk}")
    monkeypatch.undo()
    assert 'class="changed"' in page(student_client, tab, f"node=softmax&run={finished.pk}")


def test_an_empty_port_reads_no_value_this_run(student_client, tab, finished, fresh_store):
    """IN13: the node ran and left that port empty (None)."""
    fresh_store.put(str(finished.pk), "softmax", "tensor", None)
    assert "No value this run" in page(student_client, tab, f"node=softmax&run={finished.pk}")


def test_steps_and_backward_show_their_empty_states(student_client, tab, finished):
    """IN5, IN6: without Verbose internals / Capture gradients the tabs say how to fill them."""
    assert "This node does not record steps" in page(student_client, tab, f"node=softmax&run={finished.pk}&view=steps")
    assert "No gradients captured" in page(student_client, tab, f"node=softmax&run={finished.pk}&view=backward")


def test_steps_show_one_row_per_step_with_verbose_internals(student_client, tab, student):
    """IN5, TR1: with Verbose internals on, Softmax's __steps__ trace renders one row at a time."""
    student_client.post(f"/editor/{tab.pk}/settings", {"_keys": "record_outputs,verbose_internals",
                                                       "record_outputs": "on", "verbose_internals": "on"})
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    run = service.wait_for(Run.objects.get(owner=student).pk)
    body = page(student_client, tab, f"node=softmax&run={run.pk}&view=steps")
    assert body.count('class="step"') == 1 and body.count("<li><a href=") == 5
    assert 'aria-current="step"' in body.split("max_subtract")[0] and "step 1 of 5" in body
    second = page(student_client, tab, f"node=softmax&run={run.pk}&view=steps&step=2")
    assert "step 2 of 5" in second and "<math" in second and "<code>shifted</code>" in second


def test_node_details_steps_link_to_their_own_pane(student_client, tab, student):
    """ND6: in Node details the step picker stays in the Steps pane of the details page."""
    student_client.post(f"/editor/{tab.pk}/settings", {"_keys": "record_outputs,verbose_internals",
                                                       "record_outputs": "on", "verbose_internals": "on"})
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    run = service.wait_for(Run.objects.get(owner=student).pk)
    body = student_client.get(f"/editor/{tab.pk}/details/softmax/?run={run.pk}&pane=steps&step=3").content.decode()
    assert "step 3 of 5" in body
    assert f'href="/editor/{tab.pk}/details/softmax/?run={run.pk}&amp;pane=steps&amp;step=4" hx-get=' in body


def test_a_step_number_out_of_range_shows_the_nearest_step(student_client, tab, student):
    student_client.post(f"/editor/{tab.pk}/settings", {"_keys": "record_outputs,verbose_internals",
                                                       "record_outputs": "on", "verbose_internals": "on"})
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    run = service.wait_for(Run.objects.get(owner=student).pk)
    assert "step 5 of 5" in page(student_client, tab, f"node=softmax&run={run.pk}&view=steps&step=99")
    assert "step 1 of 5" in page(student_client, tab, f"node=softmax&run={run.pk}&view=steps&step=x")


def test_the_panel_collapses_to_a_strip_and_keeps_the_run(student_client, tab, finished):
    """IN23: the panel collapses to a thin strip with the › button."""
    body = page(student_client, tab, f"node=softmax&run={finished.pk}&panel=collapsed")
    assert 'aria-label="Expand inspector"' in body and "INSPECTOR</span>" in body
    assert f"run={finished.pk}" in body.split('aria-label="Expand inspector"')[0].rsplit("<a", 1)[1]


def test_a_strangers_tab_row_and_details_are_404(client, stranger, tab):
    client.force_login(stranger)
    assert client.get(f"/editor/{tab.pk}/inspect/softmax/row", {"key": "out.tensor"}).status_code == 404
    assert client.get(f"/editor/{tab.pk}/details/softmax/").status_code == 404


def test_node_details_has_the_seeds_tabs_and_steps_once_there_is_a_run(student_client, tab, finished):
    """ND2, ND6, ND8: params on the left; Inputs/Outputs, Steps/Backward once there is a run, Stats, Docs."""
    before = student_client.get(f"/editor/{tab.pk}/details/softmax/").content.decode()
    assert ">Inputs<" in before and ">Stats<" in before and ">Docs<" in before and ">Steps<" not in before
    after = student_client.get(f"/editor/{tab.pk}/details/softmax/?run={finished.pk}&pane=outputs").content.decode()
    assert ">Steps<" in after and ">Backward<" in after and "Apply parameters" in after
    assert after.count('class="changed"') == 16  # the same rules as the Forward tab


def test_docs_lists_description_details_params_and_ports(student_client, tab):
    """ND8: the node's description and details, each param with type, default, range and options, and its ports."""
    body = student_client.get(f"/editor/{tab.pk}/details/input/?pane=docs").content.decode()
    assert "explicit, random, zeros, ones, arange" in body and "<code>shape</code>" in body
    assert "output <code>tensor</code> · TENSOR" in body


def test_details_steps_to_the_previous_and_next_node(student_client, tab):
    """ND9: Left / Right step to the previous / next node on the canvas."""
    body = student_client.get(f"/editor/{tab.pk}/details/reshape/?pane=docs").content.decode()
    assert f'/editor/{tab.pk}/details/input/?pane=docs" data-step="previous"' in body
    assert f'/editor/{tab.pk}/details/softmax/?pane=docs" data-step="next"' in body


def test_renaming_in_details_returns_to_details(student_client, tab):
    """ND10: the node name is a rename field."""
    response = student_client.post(f"/editor/{tab.pk}/nodes/reshape/rename", {"label": "flatten", "_details": "1", "_state": "node=reshape"})
    assert response.url == f"/editor/{tab.pk}/details/reshape/"
    tab.refresh_from_db()
    assert tab.document["nodes"][2]["data"]["label"] == "flatten"


def test_stats_pane_summarises_every_port(student_client, tab, finished):
    """ND7: Stats shows summary statistics for every port, computed on the server."""
    body = student_client.get(f"/editor/{tab.pk}/details/softmax/?run={finished.pk}&pane=stats").content.decode()
    assert body.count('aria-label="Statistics of') == 2 and "Zero fraction" in body


def test_clicking_an_edge_after_a_run_summarises_what_flowed(student_client, tab, finished):
    """ND11: type, shape, dtype, min/max/mean, and View stats opens Node details on that port's Stats."""
    edge = next(e["id"] for e in tab.document["edges"] if e["source"] == "reshape")
    body = student_client.get(f"/editor/{tab.pk}/edges/{edge}/?run={finished.pk}").content.decode()
    assert "Reshape → Softmax (tensor)" in body and "<code>[1, 16]</code>" in body and "<code>float32</code>" in body
    assert ".0</code>" not in body  # numbers as the Inspector writes them: -2, not -2.0
    assert f"/editor/{tab.pk}/details/reshape/?run={finished.pk}&amp;pane=stats&amp;port=tensor#stats-outtensor" in body
    assert "Nothing captured yet" in student_client.get(f"/editor/{tab.pk}/edges/{edge}/").content.decode()


def test_a_node_running_when_the_server_stopped_reads_interrupted_after_a_restart(student_client, tab, student):
    """After a restart, the node that was running shows Interrupted on the canvas and in the Inspector."""
    run = Run.objects.create(owner=student, status=Run.Status.RUNNING, nodes={
        "start": {"status": "completed"}, "input": {"status": "completed"}, "reshape": {"status": "running"}})
    housekeeping.mark_interrupted_runs()
    body = page(student_client, tab, f"node=reshape&run={run.pk}")
    assert 'class="badge badge-interrupted" role="status">Interrupted</span>' in body
    assert "Interrupted: the server restarted while this node was running; run the graph again" in body
    assert "Running…" not in body and "Node is running…" not in body


@pytest.mark.parametrize("values", [1000 * 1000, 4])
def test_a_big_captures_views_are_made_off_the_request_thread(student_client, student, fresh_store, values):
    """A click on a node whose capture holds a million values or more, its Forward grids, its
    card's picture and its Stats, hands the request back to be served on a thread of its own
    (codefyui/heavy.py); a small capture's are made where the request is."""
    import torch

    from codefyui import heavy
    doc = document.normalise({"nodes": [
        {"id": "image", "type": "TensorCreate", "data": {"params": {"shape": "1,1000,1000"}}},
        {"id": "relu", "type": "Activation", "data": {"params": {"function": "relu"}}}],
        "edges": [{"id": "a", "source": "image", "sourceHandle": "tensor", "target": "relu", "targetHandle": "tensor"}]})
    tab = Tab.objects.create(owner=student, title="big", document=doc)
    run = Run.objects.create(owner=student, status=Run.Status.SUCCEEDED, options={"record": True},
                             nodes={"image": {"status": "completed"}, "relu": {"status": "completed"}})
    value = torch.randn(values)
    fresh_store.put(str(run.pk), "image", "tensor", value)
    fresh_store.put(str(run.pk), "relu", "tensor", value.relu())
    for url in (f"/editor/{tab.pk}/?node=relu&view=forward&run={run.pk}",
                f"/editor/{tab.pk}/details/relu/?pane=stats&run={run.pk}"):
        if values >= heavy.ELEMENTS:
            with heavy.movable(), pytest.raises(heavy.MovedOff):
                student_client.get(url)
            assert student_client.get(url).status_code == 200   # where it moved to
            with heavy.movable():
                assert student_client.get(url).status_code == 200   # made once: the next click stays
        else:
            with heavy.movable():
                assert student_client.get(url).status_code == 200
