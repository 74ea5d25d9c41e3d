"""When no run worker can start (a broken install), runs fail with a message instead of
waiting in the queue forever."""
from __future__ import annotations

import pytest

from apps.graphs import document
from apps.runs import service, workers
from tests.runs.worker_nodes import broken_worker

pytestmark = pytest.mark.django_db(transaction=True)


def test_when_every_worker_fails_to_start_queued_and_new_runs_fail_saying_so(student, walkthrough, monkeypatch):
    monkeypatch.setattr(workers, "worker_main", broken_worker)
    service.start_workers(2, spares=0)
    try:
        queued = service.start_run(student, document.normalise(walkthrough))
        assert service.wait_for(queued.pk, timeout=60).error == workers.NO_WORKERS
        later = service.wait_for(service.start_run(student, document.normalise(walkthrough)).pk, timeout=10)
        assert later.status == "failed" and later.error == workers.NO_WORKERS
    finally:
        service.stop_workers()
