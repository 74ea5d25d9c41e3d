"""A run made far too long (10,000 epochs where 10 were meant) does not hold the class back:
while every worker has held its run for LONG_RUN_S, a spare worker takes the next waiting
run; a burst of short runs never reaches the spares. Real worker processes: one, and a spare."""
from __future__ import annotations

import threading

import pytest

from apps.runs import service, workers
from apps.runs.models import Run
from tests.runs.test_workers import release, start, started_in, until
from tests.runs.worker_nodes import graph

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pool():
    pool = service.start_workers(1, spares=1)
    until(lambda: pool.idle() == 2, "the worker and its spare started")
    yield pool
    service.stop_workers()


def test_a_spare_takes_a_waiting_run_only_once_the_others_have_held_theirs_long(pool, student, stranger,
                                                                               tmp_path, monkeypatch):
    monkeypatch.setattr(workers, "LONG_RUN_S", 3600.0)
    long_run = start(student, graph("test:Hold", path=str(tmp_path / "long")))
    held_by = started_in(tmp_path / "long")
    waiting = start(stranger, graph("test:Hold", path=str(tmp_path / "short")))
    rounds, relieve = threading.Semaphore(0), pool._relieve
    monkeypatch.setattr(pool, "_relieve", lambda now: relieve(now) or rounds.release())   # the end of a watcher round
    for _ in range(3):   # three of the watcher's rounds since: the spare stays idle while the run is young
        assert rounds.acquire(timeout=30)
    assert Run.objects.get(pk=waiting.pk).status == "queued" and pool.idle() == 1 and pool.free() == 0
    assert service.worker_usage() == {"workers": 2, "spares": 1, "idle": 1, "computing": 1, "paused": 0, "queued": 1}

    monkeypatch.setattr(workers, "LONG_RUN_S", 0.0)   # the long run has now held its worker long enough
    taken_by = started_in(tmp_path / "short")
    assert taken_by != held_by and {taken_by, held_by} == set(pool.pids())
    release(tmp_path / "short")
    assert service.wait_for(waiting.pk).status == "succeeded"
    # still held meanwhile, as the server knows it now: the row is written later by one flusher
    # thread, and once in a loaded CI run it still read "queued" here
    assert service.current(Run.objects.get(pk=long_run.pk)).status == "running"
    release(tmp_path / "long")
    assert service.wait_for(long_run.pk).status == "succeeded"
