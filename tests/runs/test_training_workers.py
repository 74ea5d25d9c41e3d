"""Training in real run workers, as the server runs it: progress reaches the Run row, Stop ends
training within a batch and keeps what was learnt (Persist weights on), and the next run continues."""
from __future__ import annotations

import pytest

from apps.graphs import document
from apps.runs import service
from apps.runs.models import Run
from tests.runs.test_workers import until
from tests.runs.training_nodes import training_graph

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def pool():
    pool = service.start_workers(1, spares=0)
    until(lambda: pool.free() == 1, "the worker started")
    yield pool
    service.stop_workers()


def start(user, doc, **options) -> Run:
    return service.start_run(user, document.normalise(doc), overrides=options, weights_scope="tab-workers")


def test_stop_keeps_what_was_learnt_and_the_next_run_continues(pool, student):
    try:
        run = start(student, training_graph(epochs=1000, n=64), persist_weights=True)
        until(lambda: (service.current(Run.objects.get(pk=run.pk)).nodes.get("train", {}).get("progress") or {})
              .get("epoch", 0) > 3, "trained three epochs")
        service.cancel_run(run)
        stopped = service.wait_for(run.pk)
        assert stopped.status == "cancelled"
        assert stopped.nodes["train"]["status"] == "completed"  # it ended within a batch, before the worker was ended
        done = len(stopped.nodes["train"]["progress"]["losses"])
        assert done >= 3
        follow = service.wait_for(start(student, training_graph(epochs=2, n=64), persist_weights=True).pk)
        assert follow.status == "succeeded", follow.error
        assert any(f"Continuing from the weights of the last run: {done} epochs so far" == row["text"]
                   for row in follow.log)
    finally:
        service.reset_weights("tab-workers")
