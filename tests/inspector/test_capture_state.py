"""One pure function decides every Inspector message; a test per message."""
from __future__ import annotations

from apps.inspector.capture_state import (EXPIRED, FAILED, FROM_BLOCK, GRAPH_RUNNING, INTERRUPTED, MISSING,
                                          NO_VALUE, NOT_IN_RUN, NOT_KEPT, NOTHING_CAPTURED, RECORDING_STOPPED,
                                          RUN_TO_CAPTURE, RUNNING, TURN_RECORD_ON, UNREACHABLE,
                                          UNREACHABLE_STORE, WAITING, RunView, row_state)


def run(finished=True, recorded=True, **statuses):
    return RunView(finished=finished, recorded=recorded, nodes={n: {"status": s} for n, s in statuses.items()})


def state(r, producer="n", lookup=1.0, record_now=True, **kw):
    return row_state(r, producer, lookup, record_now=record_now, **kw)


def test_no_run_to_read():
    """IN7: "Nothing captured yet" until the tab has a run to read."""
    assert state(None).message == NOTHING_CAPTURED == "Nothing captured yet"


def test_waiting_for_the_producer_to_start():
    """IN8: "Waiting for this node to run…" until the producing node starts; it fills in by itself."""
    s = state(run(finished=False))
    assert s.message == "Waiting for this node to run…" == WAITING and s.waiting


def test_producer_running():
    """IN8: "Node is running…" while the producing node runs."""
    s = state(run(finished=False, n="running"))
    assert s.message == "Node is running…" == RUNNING and s.waiting


def test_fills_in_when_the_producer_finished_mid_run():
    """IN8: a row whose producer has finished shows its value while the run goes on."""
    assert state(run(finished=False, n="completed"), lookup=3.0).value == 3.0


def test_backward_waits_for_the_whole_run():
    """IN9: the Backward tab reads "Graph is running…" until the whole run ends."""
    s = state(run(finished=False, n="completed"), after_run=True)
    assert s.message == "Graph is running…" == GRAPH_RUNNING


def test_expired():
    """IN10: "Run data expired — re-run to capture" when the server holds no capture for that port."""
    assert state(run(n="completed"), lookup=MISSING).message == "Run data expired — re-run to capture" == EXPIRED


def test_a_port_not_kept_because_the_run_outgrew_the_store_says_why():
    """A run larger than the capture budget stopped recording: its unkept rows say so, not "expired"."""
    assert state(run(n="completed"), lookup=NOT_KEPT).message == RECORDING_STOPPED
    assert "CODEFYUI_RUN_OUTPUT_STORE_MAX_MB" in RECORDING_STOPPED


def test_a_node_interrupted_by_a_restart_never_reads_running():
    """After a restart, a node that was running reads interrupted, whatever the store holds."""
    assert state(run(n="interrupted"), lookup=MISSING).message == INTERRUPTED
    assert state(run(finished=False, n="interrupted")).message == INTERRUPTED


def test_worker_unreachable():
    """IN11: the worker holding the captures cannot be reached now."""
    assert state(run(n="completed"), lookup=UNREACHABLE_STORE).message == (
        "The worker that holds this run's recorded outputs cannot be reached now") == UNREACHABLE


def test_recorded_nothing_and_record_still_off_asks_for_the_setting():
    """IN12: after a run made with Record node outputs off, each row asks for that setting while it is off."""
    message = state(run(recorded=False, n="completed"), record_now=False).message
    assert message == TURN_RECORD_ON and "Record node outputs" in message


def test_recorded_nothing_and_record_now_on():
    """IN12: … and reads "Run the graph to capture its values" once it is on."""
    assert state(run(recorded=False, n="completed"), record_now=True).message == "Run the graph to capture its values" == RUN_TO_CAPTURE


def test_an_empty_port():
    """IN13: "No value this run": the node ran and left that port empty (None)."""
    assert state(run(n="completed"), lookup=None).message == "No value this run" == NO_VALUE


def test_not_in_the_last_run():
    """IN14: "Not in the last run": added after the run, or the run stopped before reaching it."""
    assert state(run()).message == "Not in the last run" == NOT_IN_RUN
    assert state(run(n="skipped")).message == NOT_IN_RUN


def test_failed_in_the_last_run():
    """IN15: "Failed in the last run" for a node that failed in it."""
    assert state(run(n="error")).message == "Failed in the last run" == FAILED
    assert state(run(finished=False, n="error")).message == FAILED


def test_an_input_through_the_block():
    """IN17: an input coming in through the block reads "From the block's input"."""
    assert state(run(n="completed"), from_block=True).message == "From the block's input" == FROM_BLOCK


def test_a_cached_node_shows_its_value():
    assert state(run(n="cached"), lookup=[1, 2]).value == [1, 2]
