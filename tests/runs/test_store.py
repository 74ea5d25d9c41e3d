"""The capture store: newest 20 runs and a byte budget, whole runs evicted oldest-first."""
from __future__ import annotations

import pytest
import torch

from apps.runs.engine.storage import RecordingStopped
from apps.runs.store import MemoryCaptureStore

MB = 2**20


def put_run(store, run_id, *tensors):
    store.open_run(run_id)
    for i, t in enumerate(tensors):
        store.put(run_id, f"n{i}", "tensor", t)
    store.close_run(run_id)


def test_only_the_newest_runs_are_kept_whole():
    """ST1, ST2: the newest 20 runs are kept; older ones go whole, oldest first."""
    store = MemoryCaptureStore(max_runs=20, max_bytes=0)
    for i in range(22):
        put_run(store, f"run{i}", torch.zeros(4), torch.ones(4))
    assert not store.has_run("run0") and not store.has_run("run1")
    assert store.has_run("run2") and store.has_run("run21")
    assert len(store.ports("run2")) == 2  # whole runs, never half of one


def test_byte_budget_evicts_oldest_whole_runs():
    """ST1, ST2: the byte budget binds too; eviction removes whole runs, oldest first."""
    store = MemoryCaptureStore(max_runs=20, max_bytes=3 * MB)
    for i in range(4):
        put_run(store, f"run{i}", torch.zeros(MB // 8), torch.zeros(MB // 8))  # 1 MiB a run
    assert [r for r in ("run0", "run1", "run2", "run3") if store.has_run(r)] == ["run1", "run2", "run3"]
    assert store.usage()["bytes"] == 3 * MB


def test_the_run_being_written_is_never_evicted():
    store = MemoryCaptureStore(max_runs=20, max_bytes=1 * MB)
    store.open_run("writing")
    store.put("writing", "a", "tensor", torch.zeros(MB // 8))
    put_run(store, "newer", torch.zeros(MB // 8))
    put_run(store, "newest", torch.zeros(MB // 8))  # over budget: the oldest closed run goes
    assert store.has_run("writing") and not store.has_run("newer") and store.has_run("newest")


def test_a_run_larger_than_the_budget_keeps_what_fits_and_stops_recording():
    """An oversize run evicts only for captures it keeps, then stops and says so once."""
    store = MemoryCaptureStore(max_runs=20, max_bytes=2 * MB)
    put_run(store, "other-student", torch.zeros(MB // 4))                 # 1 MiB
    store.open_run("big")
    store.put("big", "a", "tensor", torch.zeros(MB // 4))                 # fits beside it
    assert store.has_run("other-student")
    with pytest.raises(RecordingStopped) as stopped:
        store.put("big", "b", "tensor", torch.zeros(MB // 2))            # 3 MiB alone: cannot fit
    assert stopped.value.kept_bytes == MB
    store.put("big", "c", "tensor", torch.zeros(4))                       # refused quietly from now on
    store.close_run("big")
    assert store.has_run("other-student") and store.usage()["bytes"] == 2 * MB
    assert store.ports("big") == [("a", "tensor")]
    assert store.refused("big", "b", "tensor") and store.refused("big", "c", "tensor")
    assert not store.refused("big", "a", "tensor") and not store.refused("other-student", "n0", "tensor")


def test_room_for_a_kept_capture_is_made_by_evicting_whole_runs_oldest_first():
    store = MemoryCaptureStore(max_runs=20, max_bytes=2 * MB)
    put_run(store, "oldest", torch.zeros(MB // 4))
    put_run(store, "older", torch.zeros(MB // 4))
    store.open_run("new")
    store.put("new", "a", "tensor", torch.zeros(MB // 4))
    assert not store.has_run("oldest") and store.has_run("older") and store.has_run("new")


def test_a_capture_that_only_fits_without_other_runs_still_being_written_evicts_nothing():
    store = MemoryCaptureStore(max_runs=20, max_bytes=2 * MB)
    put_run(store, "done", torch.zeros(MB // 8))
    store.open_run("first")
    store.put("first", "a", "tensor", torch.zeros(MB // 4))
    store.open_run("second")
    with pytest.raises(RecordingStopped):
        store.put("second", "a", "tensor", torch.zeros(MB // 4 + 1))
    assert store.has_run("done") and store.has_run("first")


def test_zero_megabytes_leaves_only_the_run_count():
    store = MemoryCaptureStore(max_runs=2, max_bytes=0)
    for i in range(3):
        put_run(store, f"run{i}", torch.zeros(MB))
    assert store.usage()["runs"] == 2


def test_a_view_and_its_base_count_once():
    store = MemoryCaptureStore(max_runs=20, max_bytes=0)
    base = torch.zeros(1024)
    put_run(store, "r", base, base.view(32, 32), base[:10])
    assert store.usage()["bytes"] == 1024 * 4


def test_deleting_a_run_drops_its_captures():
    """ST3: deleting a run drops its captures."""
    store = MemoryCaptureStore()
    put_run(store, "r", torch.zeros(3))
    assert store.drop_run("r")
    assert store.get("r", "n0", "tensor") is None and store.ports("r") is None


def test_a_captured_weight_does_not_change_when_a_later_run_trains_it():
    """A capture shows what the node produced even if a later run changes tensors in place."""
    store = MemoryCaptureStore()
    weight = torch.nn.Parameter(torch.ones(3))
    put_run(store, "r", weight)
    with torch.no_grad():
        weight.add_(5)
    assert store.get("r", "n0", "tensor").value.tolist() == [1.0, 1.0, 1.0]


def test_an_overwritten_port_gets_a_new_serial():
    store = MemoryCaptureStore()
    store.put("r", "loop", "tensor", torch.zeros(2))
    first = store.get("r", "loop", "tensor").serial
    store.put("r", "loop", "tensor", torch.ones(2))
    assert store.get("r", "loop", "tensor").serial > first


def test_a_none_output_is_held_as_an_empty_port():
    store = MemoryCaptureStore()
    store.put("r", "n", "grad_scaler_state", None)
    capture = store.get("r", "n", "grad_scaler_state")
    assert capture is not None and capture.value is None


def test_the_run_limit_is_twenty_unless_the_school_raises_it(monkeypatch):
    """ST1: the store keeps 20 runs by default; CODEFYUI_RUN_OUTPUT_STORE_MAX_RUNS raises it for a larger class."""
    import importlib

    from codefyui import conf
    try:
        monkeypatch.delenv("CODEFYUI_RUN_OUTPUT_STORE_MAX_RUNS", raising=False)
        assert importlib.reload(conf).RUN_OUTPUT_STORE_MAX_RUNS == 20
        assert MemoryCaptureStore().max_runs == 20
        monkeypatch.setenv("CODEFYUI_RUN_OUTPUT_STORE_MAX_RUNS", "30")
        assert importlib.reload(conf).RUN_OUTPUT_STORE_MAX_RUNS == 30
        assert MemoryCaptureStore().max_runs == 30
    finally:
        monkeypatch.undo()
        importlib.reload(conf)


def test_the_store_class_is_chosen_by_a_dotted_path(monkeypatch):
    from apps.runs import store
    from codefyui import conf
    monkeypatch.setattr(conf, "RUN_OUTPUT_STORE_CLASS", "tests.runs.test_store.TinyStore")
    store.set_store(None)
    assert isinstance(store.get_store(), TinyStore)


@pytest.mark.parametrize("path", ["apps.runs.store.NoSuchStore", "nowhere.Store", "apps.runs.store.Capture"])
def test_a_wrong_store_class_is_named_in_the_error(monkeypatch, path):
    from apps.runs import store
    from codefyui import conf
    monkeypatch.setattr(conf, "RUN_OUTPUT_STORE_CLASS", path)
    with pytest.raises(RuntimeError, match="CODEFYUI_RUN_OUTPUT_STORE_CLASS"):
        store.store_class()


class TinyStore(MemoryCaptureStore):
    def __init__(self):
        super().__init__(max_runs=1)


def test_put_many_keeps_each_in_order_and_says_recording_stopped_once():
    """A batch that outgrows the budget keeps what came before the stop and refuses the rest."""
    store = MemoryCaptureStore(max_bytes=5000)
    items = [("a", "tensor", torch.ones(512)), ("b", "tensor", torch.ones(512)), ("c", "tensor", torch.ones(512))]
    with pytest.raises(RecordingStopped):
        store.put_many("r", items)
    assert store.get("r", "a", "tensor") is not None and store.get("r", "b", "tensor") is not None
    assert store.get("r", "c", "tensor") is None and store.refused("r", "c", "tensor")
