"""A run larger than the capture store's budget never empties the store: it keeps what fits,
stops recording with a line in its log, and the rows it could not keep say why."""
from __future__ import annotations

from apps.graphs import document
from apps.inspector import capture_state as cs
from apps.inspector.panel import Inspection
from apps.runs.engine import RunOptions, execute, plan_run
from apps.runs.engine import events as ev
from apps.runs.store import MemoryCaptureStore

MB = 2**20


def chain(length: int, shape: str) -> dict:
    """Start -> TensorCreate(shape) -> ScalarMultiply x length: every node a fresh tensor."""
    nodes = [{"id": "start", "type": "Start"},
             {"id": "n0", "type": "TensorCreate", "data": {"params": {"shape": shape, "fill": "ones"}}}]
    edges = [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "n0"}]
    for i in range(1, length + 1):
        nodes.append({"id": f"n{i}", "type": "ScalarMultiply", "data": {"params": {"scalar": 2.0}}})
        edges.append({"id": f"e{i}", "source": f"n{i - 1}", "sourceHandle": "tensor",
                      "target": f"n{i}", "targetHandle": "tensor"})
    return document.normalise({"nodes": nodes, "edges": edges})


def execute_doc(doc, store, run_id):
    events = []
    outcome = execute(plan_run(doc), RunOptions(run_id=run_id, max_parallel=1), events.append, captures=store)
    return outcome, [e.text for e in events if e.kind == ev.LOG]


def test_an_oversize_run_beside_another_students_run_keeps_what_fits_and_says_why():
    """The oversize run keeps four of its eight 256 KiB outputs (1 MiB of a 1 MiB + 1 KiB budget), evicts
    nothing for the four that cannot fit, and the other student's 64-byte run stays."""
    store = MemoryCaptureStore(max_runs=20, max_bytes=MB + 1024)
    other, _ = execute_doc(chain(1, "16"), store, "other-student")
    big, log = execute_doc(chain(7, str(MB // 16)), store, "big")
    assert other.status == big.status == "succeeded"
    assert store.has_run("other-student") and len(store.ports("other-student")) == 2
    assert [line for line in log if line.startswith("Recording stopped")] == [
        "Recording stopped after 1 MB: this run's outputs are larger than the capture store's budget "
        "(CODEFYUI_RUN_OUTPUT_STORE_MAX_MB)"]
    kept = store.ports("big")
    assert kept == [("n0", "tensor"), ("n1", "tensor"), ("n2", "tensor"), ("n3", "tensor")]
    assert store.usage()["bytes"] <= store.usage()["max_bytes"]

    view = cs.RunView(finished=True, recorded=True, nodes={n: {"status": "completed"} for n in big.nodes})
    ins = Inspection(doc={}, node_id="n5", run_id="big", run=view, store=store, record_now=True)
    state = cs.row_state(view, "n5", ins.lookup("n5", "tensor"), record_now=True)
    assert state.message == cs.RECORDING_STOPPED
    assert cs.row_state(view, "n1", ins.lookup("n1", "tensor"), record_now=True).has_value
