"""GET /api/execution/outputs/{run}/{node}/{port}/stats: permissions, messages, 204, 503, caching."""
from __future__ import annotations

import pytest
import torch

from apps.runs.models import Run
from apps.runs.store import MemoryCaptureStore, StoreUnreachable, set_store
from apps.stats import cache as stats_cache
from codefyui import conf

pytestmark = pytest.mark.django_db

HINT = "Turn on Record node outputs (Settings → Recording & Inspection) and re-run the graph to capture port data."


@pytest.fixture
def run(student):
    return Run.objects.create(owner=student)


def stats_url(run, node="softmax", port="tensor"):
    return f"/api/execution/outputs/{run.pk}/{node}/{port}/stats"


def test_a_captured_port_answers_a_fixed_size_summary_never_the_values(student_client, run, fresh_store):
    """SS1: the summary of a captured port, with run, node and port; no values."""
    fresh_store.put(str(run.pk), "softmax", "tensor", torch.arange(100_000, dtype=torch.float32))
    response = student_client.get(stats_url(run))
    assert response.status_code == 200
    body = response.json()
    assert (body["run_id"], body["node_id"], body["port"], body["kind"]) == (str(run.pk), "softmax", "tensor", "tensor")
    assert (body["count"], body["min"], body["max"], body["quantiles"]["p50"]) == (100_000, 0.0, 99_999.0, 49_999.5)
    assert len(body["histogram"]["counts"]) == 64 and "values" not in body
    assert len(response.content) < 4_000   # fixed size, whatever the tensor's


def test_node_ids_with_a_slash_use_the_query_form(student_client, run, fresh_store):
    fresh_store.put(str(run.pk), "block/inner", "out", torch.ones(3))
    response = student_client.get(f"/api/execution/outputs/{run.pk}/stats", {"node_id": "block/inner", "port": "out"})
    assert response.status_code == 200 and response.json()["node_id"] == "block/inner"
    assert student_client.get(f"/api/execution/outputs/{run.pk}/stats").status_code == 400


def test_a_strangers_run_and_an_unknown_run_do_not_exist(client, stranger, run, fresh_store):
    fresh_store.put(str(run.pk), "softmax", "tensor", torch.ones(3))
    client.force_login(stranger)
    response = client.get(stats_url(run))
    assert response.status_code == 404 and "not found" in response.json()["detail"]
    assert client.get("/api/execution/outputs/not-a-uuid/softmax/tensor/stats").status_code == 404


def test_anonymous_requests_are_refused(client, run):
    assert client.get(stats_url(run)).status_code == 401


def test_a_run_the_store_no_longer_holds_says_how_to_capture(student_client, run):
    response = student_client.get(stats_url(run))
    assert response.status_code == 404
    assert response.json()["detail"].endswith(HINT)


def test_a_port_that_was_not_captured_says_how_to_capture(student_client, run, fresh_store):
    fresh_store.put(str(run.pk), "softmax", "tensor", torch.ones(3))
    response = student_client.get(stats_url(run, port="other"))
    assert response.status_code == 404
    detail = response.json()["detail"]
    assert "'other'" in detail and "'softmax'" in detail and detail.endswith(HINT)


def test_a_captured_none_is_no_content(student_client, run, fresh_store):
    fresh_store.put(str(run.pk), "softmax", "tensor", None)
    assert student_client.get(stats_url(run)).status_code == 204


class UnreachableStore(MemoryCaptureStore):
    def get(self, run_id, node_id, port):
        raise StoreUnreachable(run_id)

    def has_run(self, run_id):
        raise StoreUnreachable(run_id)


def test_an_unreachable_store_is_a_503(student_client, run):
    set_store(UnreachableStore())
    response = student_client.get(stats_url(run))
    assert response.status_code == 503
    assert response.json()["detail"] == "The worker that holds this run's recorded outputs cannot be reached now"


def test_a_port_is_summarised_once_and_again_after_it_is_overwritten(student_client, run, fresh_store, monkeypatch):
    """SS4: summaries are cached, keyed by the capture's write serial, so an overwrite recomputes."""
    calls = []
    real = stats_cache.summarise
    monkeypatch.setattr(stats_cache, "summarise", lambda value, **kw: calls.append(1) or real(value, **kw))
    fresh_store.put(str(run.pk), "loop", "tensor", torch.zeros(4))
    assert student_client.get(stats_url(run, "loop")).json()["mean"] == 0.0
    assert student_client.get(stats_url(run, "loop")).json()["mean"] == 0.0
    assert len(calls) == 1
    fresh_store.put(str(run.pk), "loop", "tensor", torch.ones(4))   # a loop node writes its port again
    assert student_client.get(stats_url(run, "loop")).json()["mean"] == 1.0
    assert len(calls) == 2


def test_the_sampling_settings_apply(student_client, run, fresh_store, monkeypatch):
    """SS3: CODEFYUI_STATS_SAMPLE_THRESHOLD and CODEFYUI_STATS_SAMPLE_SIZE decide when and how much to sample."""
    monkeypatch.setattr(conf, "STATS_SAMPLE_THRESHOLD", 1_000)
    monkeypatch.setattr(conf, "STATS_SAMPLE_SIZE", 500)
    fresh_store.put(str(run.pk), "big", "tensor", torch.randn(5_000, generator=torch.Generator().manual_seed(0)))
    body = student_client.get(stats_url(run, "big")).json()
    assert (body["sampled"], body["sample_size"], body["count"]) == (True, 500, 5_000)
