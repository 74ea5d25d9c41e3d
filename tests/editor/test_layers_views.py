"""The Layers editor in a SequentialModel's Node details: plain form posts, one undo step each."""
from __future__ import annotations

import json

import pytest
import torch

from apps.editor.models import STALE_EDIT, Tab
from apps.graphs import document, layers
from apps.runs.models import Run

pytestmark = pytest.mark.django_db(transaction=True)

MLP = layers.dumps(layers.chain_of([("f", "Flatten", {}), ("l1", "Linear", {"in_features": 128, "out_features": 10})]))


@pytest.fixture
def tab(student):
    doc = document.normalise({"nodes": [
        {"id": "start", "type": "Start"},
        {"id": "model", "type": "SequentialModel", "data": {"params": {"layers": MLP}}},
    ], "edges": [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger",
                  "target": "model", "targetHandle": "trigger"}]})
    return Tab.objects.create(owner=student, title="model", document=doc)


def details(client, tab, query=""):
    return client.get(f"/editor/{tab.pk}/details/model/{query}").content.decode()


def post(client, tab, action, **fields):
    tab.refresh_from_db()
    return client.post(f"/editor/{tab.pk}/nodes/model/layers/{action}",
                       {"_details": "1", "_revision": tab.revision, **fields}, follow=True)


def layer_ids(tab) -> list[str]:
    tab.refresh_from_db()
    model = next(n for n in tab.document["nodes"] if n["id"] == "model")
    return [s.id for s in layers.parse(model["data"]["params"]["layers"]).steps]


def test_layers_is_the_first_pane_of_a_sequential_model(student_client, tab):
    body = details(student_client, tab)
    assert 'aria-current="page" class="current">Layers<' in body
    assert "<strong>Flatten</strong> <code>f</code>" in body and "<strong>Linear</strong> <code>l1</code>" in body
    assert "Give a sample input shape" in body


def test_a_sample_shape_shows_the_shape_after_each_layer_and_the_misfit(student_client, tab):
    body = post(student_client, tab, "sample-shape", shape="64, 2, 14, 14").content.decode()
    assert "Input <code>x</code>: <strong>[64, 2, 14, 14]</strong>" in body
    assert 'aria-label="Shape after f">→ [64, 392]</span>' in body
    assert "Linear expects 128 features, gets 392" in body


def test_adding_a_layer_is_one_undo_step_and_answers_node_details(student_client, tab):
    response = post(student_client, tab, "add", type="ReLU", after="l1")
    assert response.redirect_chain[-1][0].startswith(f"/editor/{tab.pk}/details/model/")
    assert layer_ids(tab) == ["f", "l1", "relu1"] and tab.history.count() == 1
    student_client.post(f"/editor/{tab.pk}/undo")
    assert layer_ids(tab) == ["f", "l1"]


def test_removing_moving_and_setting_a_layer(student_client, tab):
    post(student_client, tab, "move", layer="l1", direction="up")
    assert layer_ids(tab) == ["l1", "f"]
    post(student_client, tab, "remove", layer="f")
    assert layer_ids(tab) == ["l1"]
    post(student_client, tab, "params", layer="l1", in_features="392", out_features="10", _bools="bias")
    tab.refresh_from_db()
    model = next(n for n in tab.document["nodes"] if n["id"] == "model")
    assert json.loads(model["data"]["params"]["layers"])["nodes"][1]["params"] == {
        "in_features": 392, "out_features": 10, "bias": False}


def test_a_bad_setting_is_named_and_nothing_is_saved(student_client, tab):
    body = post(student_client, tab, "params", layer="l1", in_features="lots").content.decode()
    assert "Layer &#x27;l1&#x27; (Linear): &#x27;in_features&#x27; must be a number" in body
    assert tab.history.count() == 0


def test_a_stale_form_is_refused_and_nothing_is_lost(student_client, tab):
    stale = Tab.objects.get(pk=tab.pk).revision
    post(student_client, tab, "add", type="ReLU")
    body = student_client.post(f"/editor/{tab.pk}/nodes/model/layers/remove",
                               {"_details": "1", "_revision": stale, "layer": "l1"}, follow=True).content.decode()
    assert STALE_EDIT in body
    assert layer_ids(tab) == ["f", "l1", "relu1"]


def test_the_shapes_follow_the_input_the_model_received_in_the_run(student_client, tab, student, fresh_store):
    model = layers.LayerGraph(layers.parse(MLP))
    model(torch.zeros(8, 2, 8, 8))
    run = Run.objects.create(owner=student, graph_name="model", status=Run.Status.SUCCEEDED,
                             nodes={"model": {"status": "completed"}})
    fresh_store.open_run(str(run.pk))
    fresh_store.put(str(run.pk), "model", "model", model)
    fresh_store.close_run(str(run.pk))
    body = details(student_client, tab, f"?run={run.pk}")
    assert "Input <code>x</code>: <strong>[8, 2, 8, 8]</strong>" in body
    assert "the input the model received in this run" in body and "→ [8, 128]" in body


def test_a_stranger_cannot_edit_my_layers(client, stranger, tab):
    client.force_login(stranger)
    assert client.post(f"/editor/{tab.pk}/nodes/model/layers/add", {"type": "ReLU"}).status_code == 404
    assert layer_ids(tab) == ["f", "l1"]


def test_selected_canvas_layers_become_a_model_that_is_selected(student_client, student):
    doc = document.normalise({"nodes": [
        {"id": "fc", "type": "Linear", "data": {"params": {"in_features": 4, "out_features": 2}}},
        {"id": "act", "type": "Activation", "data": {"params": {"function": "tanh"}}},
        {"id": "show", "type": "Print"},
    ], "edges": [{"id": "e", "source": "fc", "sourceHandle": "tensor", "target": "act", "targetHandle": "tensor"}]})
    tab = Tab.objects.create(owner=student, title="canvas", document=doc)
    response = student_client.post(f"/editor/{tab.pk}/model-from-layers", {"node": ["fc", "act"]})
    assert response.url == f"/editor/{tab.pk}/?node=sequentialmodel-1"
    tab.refresh_from_db()
    model = next(n for n in tab.document["nodes"] if n["id"] == "sequentialmodel-1")
    assert [s.type for s in layers.parse(model["data"]["params"]["layers"]).steps] == ["Linear", "Tanh"]
    body = student_client.post(f"/editor/{tab.pk}/model-from-layers", {"node": ["fc", "show"]}, follow=True).content.decode()
    assert "Print (show) is not a layer" in body


def test_a_run_builds_the_model_in_a_run_worker_and_records_it(student_client, tab, student, fresh_store):
    from apps.runs import service
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    run = service.wait_for(Run.objects.get(owner=student).pk)
    assert run.status == Run.Status.SUCCEEDED, run.log
    assert isinstance(fresh_store.get(str(run.pk), "model", "model").value, layers.LayerGraph)
