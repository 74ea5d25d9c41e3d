"""The outputs JSON API: list, value with slice and limits, 204, 404 guidance, delete, owners only."""
from __future__ import annotations

import pytest
import torch

from apps.runs.engine.storage import RecordingStopped
from apps.runs.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(student, fresh_store):
    run = Run.objects.create(owner=student, status=Run.Status.SUCCEEDED)
    rid = str(run.pk)
    fresh_store.put(rid, "x", "tensor", torch.arange(24.0).reshape(2, 3, 4))
    fresh_store.put(rid, "x", "empty", None)
    fresh_store.put(rid, "m", "scores", torch.tensor([1.0, float("nan"), -float("inf")]))
    fresh_store.put(rid, "block/inner", "tensor", torch.ones(2))
    fresh_store.put(rid, "p", "label", "hello")
    return run


def url(run, *rest):
    return "/api/execution/outputs/" + "/".join([str(run.pk), *rest])


def test_lists_captured_ports(student_client, run):
    body = student_client.get(url(run)).json()
    assert {"node_id": "x", "port": "tensor", "type": "tensor", "full_shape": [2, 3, 4]} in body
    assert {"node_id": "p", "port": "label", "type": "string", "full_shape": None} in body


def test_a_value_with_a_slice(student_client, run):
    body = student_client.get(url(run, "x", "tensor"), {"slice": "1,:,1:3"}).json()
    assert body["sliced_shape"] == [3, 2] and body["values"][0] == [13.0, 14.0]
    assert body["full_shape"] == [2, 3, 4] and body["min"] == 13.0 and body["max"] == 22.0


def test_too_many_elements_answers_413_with_guidance(student_client, run):
    response = student_client.get(url(run, "x", "tensor"), {"max_elements": "10"})
    assert response.status_code == 413
    assert response.json()["detail"] == "output has 24 elements (max 10); supply a narrower 'slice' parameter"


def test_a_million_values_are_made_into_json_off_the_request_thread(student_client, run, fresh_store):
    """Turning a million values into JSON takes ~0.2 s: the request moves to a thread of its own
    (codefyui/heavy.py); a narrower slice of the same capture does not."""
    from codefyui import heavy
    fresh_store.put(str(run.pk), "big", "tensor", torch.zeros(2, 1000, 1000))
    wide = {"slice": "0", "max_elements": "1000000"}
    with heavy.movable():
        with pytest.raises(heavy.MovedOff):
            student_client.get(url(run, "big", "tensor"), wide)
        assert student_client.get(url(run, "big", "tensor"), {"slice": "0,:4"}).json()["sliced_shape"] == [4, 1000]
    assert student_client.get(url(run, "big", "tensor"), wide).json()["sliced_shape"] == [1000, 1000]


def test_bad_slices_answer_400(student_client, run):
    assert student_client.get(url(run, "x", "tensor"), {"slice": "a"}).json()["detail"].startswith("invalid slice")
    assert student_client.get(url(run, "x", "tensor"), {"slice": "9"}).json()["detail"].startswith("slice failed")
    assert student_client.get(url(run, "x", "tensor"), {"max_elements": "0"}).status_code == 400


def test_an_empty_port_answers_204(student_client, run):
    assert student_client.get(url(run, "x", "empty")).status_code == 204


def test_non_finite_numbers_are_json_safe(student_client, run):
    response = student_client.get(url(run, "m", "scores"))
    assert b"NaN" not in response.content and response.json()["values"] == [1.0, None, None]


def test_node_ids_with_a_slash_are_reachable(student_client, run):
    body = student_client.get(url(run, "value"), {"node_id": "block/inner", "port": "tensor"}).json()
    assert body["values"] == [1.0, 1.0]


def test_a_gone_run_answers_404_with_guidance(student_client, run, fresh_store):
    fresh_store.drop_run(str(run.pk))
    detail = student_client.get(url(run, "x", "tensor")).json()["detail"]
    assert "no longer held by the server" in detail and "Record node outputs" in detail


def test_a_port_not_kept_when_its_run_outgrew_the_store_says_so(student_client, run, fresh_store):
    fresh_store.max_bytes = 1024
    with pytest.raises(RecordingStopped):
        fresh_store.put(str(run.pk), "big", "tensor", torch.zeros(1024))
    response = student_client.get(url(run, "big", "tensor"))
    assert response.status_code == 404
    assert "stopped recording" in response.json()["detail"] and "CODEFYUI_RUN_OUTPUT_STORE_MAX_MB" in response.json()["detail"]


def test_delete_drops_the_captures(student_client, run, fresh_store):
    assert student_client.delete(url(run)).json() == {"run_id": str(run.pk), "deleted": True}
    assert not fresh_store.has_run(str(run.pk))


def test_a_strangers_run_is_not_found(client, stranger, run):
    client.force_login(stranger)
    assert client.get(url(run)).status_code == 404
    assert client.get(url(run, "x", "tensor")).status_code == 404
    assert client.delete(url(run)).status_code == 404
