"""TrainingLoop through the engine: progress events, Stop within a batch, Persist weights
continuing, per-epoch captures, and the element limit holding for training."""
from __future__ import annotations

import threading

import pytest

from apps.graphs import document
from apps.runs.engine import WEIGHTS, RunOptions, execute, plan_run
from apps.runs.engine import events as ev
from tests.runs.training_nodes import training_graph


def run(doc, store=None, cancel=None, on_event=None, **options):
    events: list[ev.Event] = []

    def emit(event):
        events.append(event)
        if on_event:
            on_event(event)

    outcome = execute(plan_run(document.normalise(doc)), RunOptions(run_id=options.pop("run_id", "r1"), **options),
                      emit, captures=store, cancel=cancel)
    return outcome, events


def progress(events):
    return [e for e in events if e.kind == ev.PROGRESS]


def test_training_reports_progress_and_the_last_report_comes_before_completed():
    outcome, events = run(training_graph(epochs=3))
    assert outcome.status == "succeeded", outcome.error
    reports = progress(events)
    assert reports and all(e.node_id == "train" and e.label == "TrainingLoop" for e in reports)
    assert reports[-1].data["epoch"] == 3 and len(reports[-1].data["losses"]) == 3
    kinds = [e.kind for e in events if e.node_id == "train"]
    assert kinds.index(ev.NODE_COMPLETED) > max(i for i, k in enumerate(kinds) if k == ev.PROGRESS)


def test_progress_is_sent_at_most_four_times_a_second():
    """Many batches in well under a second: a handful of reports, not one per batch."""
    _, events = run(training_graph(epochs=20, n=64))
    assert len(progress(events)) <= 4 * 5 and progress(events)[-1].data["epoch"] == 20


def test_stop_ends_training_within_a_batch_and_the_run_is_stopped():
    cancel = threading.Event()
    outcome, events = run(training_graph(epochs=1000, n=64), cancel=cancel,
                          on_event=lambda e: e.kind == ev.PROGRESS and cancel.set())
    assert outcome.status == "cancelled"
    assert outcome.nodes["train"].status == "completed"
    assert outcome.outputs["train"]["metrics"]["total_epochs_run"] < 1000
    assert [e.kind for e in events if e.kind in ev.TERMINAL] == [ev.RUN_STOPPED]


def test_persist_weights_continues_training_and_the_log_says_so():
    doc = training_graph(epochs=5)
    try:
        first, _ = run(doc, persist_weights=True, weights_scope="tab-train", run_id="a")
        second, _ = run(doc, persist_weights=True, weights_scope="tab-train", run_id="b")
        assert "Continuing from the weights of the last run: 5 epochs so far" in second.log
        assert second.outputs["train"]["losses"][0] < first.outputs["train"]["losses"][0]
        WEIGHTS.reset("tab-train")
        third, _ = run(doc, persist_weights=True, weights_scope="tab-train", run_id="c")
        assert not any("Continuing" in line for line in third.log)
    finally:
        WEIGHTS.reset("tab-train")


def test_record_on_captures_each_epoch_while_record_off_captures_none(fresh_store):
    run(training_graph(epochs=2), store=fresh_store, run_id="on")
    ports = {port for node, port in fresh_store.ports("on") if node == "train"}
    assert {"__epoch1", "__epoch2", "model", "losses"} <= ports
    assert "0.weight" in fresh_store.get("on", "train", "__epoch2").value["weights"]
    run(training_graph(epochs=2), store=fresh_store, run_id="off", record=False)
    assert not fresh_store.has_run("off")


def test_the_element_limit_holds_for_a_training_step():
    """A model whose first step makes a tensor over the limit is refused, naming the node."""
    outcome, _ = run(training_graph(epochs=2, n=64, batch_size=64), max_elements=300)  # the data: 256
    assert outcome.status == "failed"
    assert "TrainingLoop would need a tensor of shape [64, 8]" in outcome.error


@pytest.mark.parametrize("batches", [1, 3])
def test_after_a_checked_step_the_loop_runs_unguarded(monkeypatch, batches):
    """The guard sees the first full-size step's ops, then no more (limits.suspended)."""
    from apps.runs.engine import limits
    seen = []
    dispatch = limits._ElementLimit.__torch_dispatch__

    def counting(self, func, types, args=(), kwargs=None):
        seen.append(self.node)
        return dispatch(self, func, types, args, kwargs)

    monkeypatch.setattr(limits._ElementLimit, "__torch_dispatch__", counting)
    run(training_graph(epochs=1, n=8 * batches))
    one_epoch = seen.count("TrainingLoop")
    seen.clear()
    run(training_graph(epochs=10, n=8 * batches))
    assert seen.count("TrainingLoop") < one_epoch * 2
