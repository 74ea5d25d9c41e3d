"""The engine runs a planned graph: order, failures, seeds, cache, limits, cancel, events."""
from __future__ import annotations

import copy
import threading
import time

import pytest
import torch

from apps.graphs import document
from apps.graphs.nodes.base import Node, Port, register, registry
from apps.runs.engine import ExecutionCache, RunOptions, execute, plan_run
from apps.runs.engine import events as ev


def run(doc, store=None, cache=None, cancel=None, **options):
    events: list[ev.Event] = []
    lock = threading.Lock()

    def emit(event):
        with lock:
            events.append(event)

    outcome = execute(plan_run(document.normalise(doc)), RunOptions(run_id=options.pop("run_id", "r1"), **options),
                      emit, captures=store, cancel=cancel, cache=cache)
    return outcome, events


def kinds(events, node_id=None):
    return [e.kind for e in events if node_id is None or e.node_id == node_id]


def test_walkthrough_succeeds_and_softmax_sums_to_one(walkthrough, fresh_store):
    """WK3: TensorInput 1,4,4 explicit -> Reshape 1,16 -> Softmax -> Print runs; softmax sums to 1."""
    outcome, events = run(walkthrough, store=fresh_store)
    assert outcome.status == "succeeded", outcome.error
    probabilities = outcome.outputs["softmax"]["tensor"]
    assert list(probabilities.shape) == [1, 16]
    assert probabilities.sum().item() == pytest.approx(1.0, abs=1e-6)
    assert {n: r.status for n, r in outcome.nodes.items()} == dict.fromkeys(
        ["start", "input", "reshape", "softmax", "print"], "completed")
    assert any(e.kind == ev.LOG and e.text.startswith("[probabilities]") for e in events)


def test_reshape_default_stops_the_run_at_reshape(walkthrough):
    """WK4: Reshape's default -1,784 does not fit 16 values and stops the run at Reshape."""
    reshape = next(n for n in walkthrough["nodes"] if n["id"] == "reshape")
    reshape["data"]["params"] = {}
    outcome, events = run(walkthrough)
    assert outcome.status == "failed"
    assert outcome.nodes["reshape"].status == "error"
    assert "16 values cannot be reshaped to [-1, 784]" in outcome.nodes["reshape"].error
    assert outcome.error.startswith("Reshape failed: ") and "16 values cannot be reshaped to [-1, 784]" in outcome.error
    assert outcome.nodes["softmax"].status == outcome.nodes["print"].status == "skipped"
    assert kinds(events)[-1] == ev.RUN_FAILED


def test_events_follow_the_run(walkthrough):
    """Each node reports running then completed with a summary; exactly one terminal event ends the run."""
    _, events = run(walkthrough)
    assert kinds(events)[0] == ev.RUN_STARTED
    assert [k for k in kinds(events) if k in ev.TERMINAL] == [ev.RUN_COMPLETED]
    assert kinds(events, "reshape") == [ev.NODE_RUNNING, ev.NODE_COMPLETED]
    summary = next(e.summary for e in events if e.kind == ev.NODE_COMPLETED and e.node_id == "reshape")
    assert summary["tensor"]["shape"] == [1, 16] and summary["tensor"]["dtype"] == "torch.float32"
    assert {"min", "max", "mean"} <= summary["tensor"].keys()


def test_the_log_names_nodes_by_their_names(walkthrough):
    """Issue 13 item 10: people read names: node events carry the node's name and its log rows
    say it ("Node Reshape completed"); the id stays beside it for the page to find the card."""
    reshape = next(n for n in walkthrough["nodes"] if n["id"] == "reshape")
    reshape["data"]["label"] = "Flatten"
    _, events = run(walkthrough)
    done = next(e for e in events if e.kind == ev.NODE_COMPLETED and e.node_id == "reshape")
    assert done.label == "Flatten"
    assert ev.log_entry(done) == {"node": "reshape", "label": "Flatten", "text": "Node Flatten completed", "level": "success"}


def test_summaries_encode_non_finite_numbers_as_json_safe_text():
    """Non-finite numbers in summaries are readable JSON, never bare NaN."""
    summary = ev.summarise(torch.tensor([1.0, float("inf"), float("nan")]))
    assert summary["max"] in ("Infinity", "NaN") and summary["mean"] == "NaN"


def test_summaries_later_are_worked_out_once_and_cross_as_the_dicts_they_stand_for():
    """A run worker's events carry Summaries, resolved by its outbox thread when it pickles
    them: the same dicts as at once; a weight's summary is taken at once (training changes
    it in place), a fresh output's when first read."""
    import pickle

    weight = torch.nn.Linear(2, 2).weight
    outputs = {"tensor": torch.tensor([1.0, -3.0]), "weight": weight, "scale": 2.5, "__steps__": []}
    later = ev.Summaries(outputs)
    with torch.no_grad():
        weight.fill_(7.0)
    now = {port: ev.summarise(v) for port, v in outputs.items() if not port.startswith("__")}
    crossed = pickle.loads(pickle.dumps(later))
    assert type(crossed) is dict and list(crossed) == ["tensor", "weight", "scale"]
    assert crossed["tensor"] == now["tensor"] == {"type": "tensor", "shape": [2], "dtype": "torch.float32",
                                                  "min": -3.0, "max": 1.0, "mean": -1.0}
    assert crossed["weight"]["max"] != 7.0 and now["weight"]["max"] == 7.0   # as it was when the node ended
    assert later.resolve() is later.resolve()


def test_a_run_with_summaries_later_reports_what_a_run_without_does(walkthrough):
    """The engine's only difference with summaries_later: when the summaries are worked out."""
    def summaries(later):
        events = []
        execute(plan_run(document.normalise(walkthrough)), RunOptions(run_id="r"), events.append,
                summaries_later=later)
        return {e.node_id: dict(e.summary.resolve() if later else e.summary)
                for e in events if e.kind == ev.NODE_COMPLETED}

    assert summaries(True) == summaries(False)


def test_mean64_adds_in_float64_piece_by_piece_as_one_sum_would():
    """Several pieces, a non-contiguous view and a NaN all give what one float64 sum gives."""
    t = torch.randn(3 * ev.PIECE + 5, generator=torch.Generator().manual_seed(0)) * 1e4 + 1e7
    assert ev.mean64(t) == pytest.approx(t.sum(dtype=torch.float64).item() / t.numel(), rel=1e-14)
    grid = t[: 600 * 700].reshape(600, 700).T
    assert ev.mean64(grid) == pytest.approx(grid.double().mean().item(), rel=1e-14)
    t[-1] = float("nan")
    assert ev.mean64(t) != ev.mean64(t)


def test_seeded_run_repeats_bitwise(walkthrough):
    """SP15: the same seed gives the same numbers, bitwise, on CPU."""
    source = next(n for n in walkthrough["nodes"] if n["id"] == "input")  # a node that draws from the run's seed
    source["type"], source["data"]["params"] = "TensorCreate", {"shape": "1,4,4", "fill": "randn"}
    first, _ = run(copy.deepcopy(walkthrough), seed=123, run_id="a")
    second, _ = run(copy.deepcopy(walkthrough), seed=123, run_id="b")
    other, _ = run(copy.deepcopy(walkthrough), seed=124, run_id="c")
    a, b = first.outputs["softmax"]["tensor"], second.outputs["softmax"]["tensor"]
    assert torch.equal(a, b)
    assert not torch.equal(a, other.outputs["softmax"]["tensor"])


def test_a_deterministic_node_is_served_from_cache_the_second_time(walkthrough, fresh_store):
    """An unchanged deterministic node is reported cached, and its outputs are still captured."""
    cache = ExecutionCache()
    run(walkthrough, cache=cache, run_id="first")
    outcome, events = run(walkthrough, store=fresh_store, cache=cache, run_id="second")
    assert outcome.nodes["reshape"].status == "cached"
    assert ev.NODE_RUNNING not in kinds(events, "reshape")
    assert fresh_store.get("second", "reshape", "tensor") is not None
    assert any(e.kind == ev.LOG and e.node_id == "print" for e in events), "a cached Print still logs"


@pytest.mark.parametrize("flag", ["verbose", "gradients"])
def test_verbose_internals_and_capture_gradients_turn_the_cache_off(walkthrough, flag):
    """SP9, SP13: with Verbose internals or Capture gradients on, every node re-executes."""
    cache = ExecutionCache()
    run(walkthrough, cache=cache, run_id="first")
    outcome, _ = run(walkthrough, cache=cache, run_id="second", **{flag: True})
    assert {r.status for r in outcome.nodes.values()} == {"completed"}


def test_a_changed_param_misses_the_cache(walkthrough):
    cache = ExecutionCache()
    run(walkthrough, cache=cache, run_id="first")
    next(n for n in walkthrough["nodes"] if n["id"] == "softmax")["data"]["params"]["dim"] = 1
    outcome, _ = run(walkthrough, cache=cache, run_id="second")
    assert outcome.nodes["reshape"].status == "cached"
    assert outcome.nodes["softmax"].status == outcome.nodes["print"].status == "completed"


def test_huge_allocation_fails_before_allocating(walkthrough):
    """A node asked for more than CODEFYUI_MAX_TENSOR_ELEMENTS fails with a message, the server lives on."""
    params = next(n for n in walkthrough["nodes"] if n["id"] == "input")["data"]["params"]
    params.update(shape="100000,100000,100", value_mode="zeros")
    outcome, _ = run(walkthrough)
    assert outcome.status == "failed"
    assert "CODEFYUI_MAX_TENSOR_ELEMENTS" in outcome.nodes["input"].error


@register
class _Sleep(Node):
    """Test node: waits until released, so cancel and timeout can be exercised."""
    type = "test:Sleep"
    category = "Utility"
    inputs = (Port("tensor"),)
    outputs = (Port("tensor"),)
    release = threading.Event()

    def run(self, ctx, params, tensor):
        self.release.wait(5)
        return {"tensor": tensor}


@register
class _AddOneInPlace(Node):
    """Test node: writes into its input, as a careless plugin might (and declares it)."""
    type = "test:AddOneInPlace"
    category = "Utility"
    inputs = (Port("tensor"),)
    outputs = (Port("tensor"),)
    mutates_inputs = True

    def run(self, ctx, params, tensor):
        return {"tensor": tensor.add_(1)}


def _insert_after_input(doc, type_key):
    doc["nodes"].append({"id": "extra", "type": type_key, "position": {"x": 0, "y": 0}, "data": {"params": {}}})
    edge = next(e for e in doc["edges"] if e["source"] == "input" and e.get("type") != "trigger")
    doc["edges"].append({"id": "e-extra", "source": "extra", "sourceHandle": "tensor",
                         "target": edge["target"], "targetHandle": "tensor"})
    edge["target"] = "extra"
    return doc


def test_stop_cancels_between_nodes_and_ends_with_one_stopped_event(walkthrough):
    """Stop lets the running node finish, runs nothing after it, and always ends with stopped."""
    doc = _insert_after_input(walkthrough, "test:Sleep")
    cancel = threading.Event()
    _Sleep.release.clear()
    result = {}
    worker = threading.Thread(target=lambda: result.update(zip(("outcome", "events"), run(doc, cancel=cancel))))
    worker.start()
    cancel.set()
    _Sleep.release.set()
    worker.join(10)
    outcome, events = result["outcome"], result["events"]
    assert outcome.status == "cancelled"
    assert [k for k in kinds(events) if k in ev.TERMINAL] == [ev.RUN_STOPPED]
    assert outcome.nodes["print"].status == "skipped"


def test_a_run_past_its_time_limit_is_stopped_with_a_message(walkthrough):
    """CODEFYUI_RUN_TIMEOUT_S stops a run that takes too long."""
    doc = _insert_after_input(walkthrough, "test:Sleep")
    _Sleep.release.clear()
    try:
        outcome, events = run(doc, timeout_s=0.3)
    finally:
        _Sleep.release.set()
    assert outcome.status == "failed"
    assert "CODEFYUI_RUN_TIMEOUT_S" in outcome.error
    assert kinds(events)[-1] == ev.RUN_FAILED


def test_capture_keeps_what_the_node_produced_when_a_later_node_writes_in_place(walkthrough, fresh_store):
    """A capture shows what the node produced even if a later node changes tensors in place."""
    doc = _insert_after_input(walkthrough, "test:AddOneInPlace")
    outcome, _ = run(doc, store=fresh_store)
    assert outcome.status == "succeeded", outcome.error
    captured = fresh_store.get("r1", "input", "tensor").value
    assert captured.flatten()[0].item() == 0.5  # the walkthrough's first value, not 1.5


def test_record_off_captures_nothing(walkthrough, fresh_store):
    """WK12: with Record node outputs off, the run is not captured."""
    run(walkthrough, store=fresh_store, record=False)
    assert not fresh_store.has_run("r1")


def test_every_completed_node_output_is_captured_keyed_by_run(walkthrough, fresh_store):
    """WK7: every completed node's full output is captured in server memory, keyed by the run."""
    run(walkthrough, store=fresh_store, run_id="run-a")
    assert set(fresh_store.ports("run-a")) >= {("input", "tensor"), ("reshape", "tensor"),
                                               ("softmax", "tensor"), ("print", "value")}
    assert list(fresh_store.get("run-a", "reshape", "tensor").value.shape) == [1, 16]


def test_unavailable_device_falls_back_to_cpu_with_a_warning(walkthrough):
    """Device: the requested device if this server has it, else CPU with a warning in the run log."""
    outcome, events = run(walkthrough, device="cuda:7" if torch.cuda.is_available() else "cuda")
    assert outcome.status == "succeeded" and outcome.device == "cpu"
    assert any("Runs fall back to CPU" in line for line in outcome.log)


def test_deterministic_flag_is_set_for_the_run_only(walkthrough):
    """SP16: deterministic algorithms are on during the run and off again after it."""
    outcome, _ = run(walkthrough, deterministic=True)
    assert outcome.status == "succeeded"
    assert not torch.are_deterministic_algorithms_enabled()


def test_the_catalogue_has_the_foundation_nodes():
    expected = {"Start", "TensorInput", "TensorCreate", "Reshape", "Flatten", "Concat", "Print", "Linear",
                "Embedding", "Add", "Multiply", "MatMul", "Mean", "Permute", "Squeeze", "Unsqueeze", "Stack",
                "Split", "Argmax", "ScalarMultiply", "Softmax", "Conv2d", "ConvTranspose2d", "MaxPool2d",
                "AvgPool2d", "AdaptiveAvgPool2d", "Activation", "Dropout", "BatchNorm2d", "LayerNorm",
                "RNNCell", "LSTM", "GRU", "MultiHeadAttention", "TransformerEncoder", "TransformerDecoder",
                "Loss", "Optimizer", "BackwardOnce"}
    assert expected <= set(registry())


def _with_linear(walkthrough):
    doc = copy.deepcopy(walkthrough)
    doc["nodes"].append({"id": "fc", "type": "Linear", "position": {"x": 0, "y": 0},
                         "data": {"params": {"in_features": 16, "out_features": 2}}})
    doc["edges"].append({"id": "e-fc", "source": "reshape", "sourceHandle": "tensor", "target": "fc", "targetHandle": "tensor"})
    return doc


def test_persist_weights_keeps_a_layer_between_runs_and_the_log_says_so(walkthrough):
    """SP11: with Persist weights on, the next run continues with the same weights, and the run log says so."""
    from apps.runs.engine import WEIGHTS
    doc = _with_linear(walkthrough)
    first, _ = run(doc, persist_weights=True, weights_scope="tab-test", run_id="a")
    second, _ = run(doc, persist_weights=True, weights_scope="tab-test", run_id="b")
    assert torch.equal(first.outputs["fc"]["tensor"], second.outputs["fc"]["tensor"])
    assert any("continues with the weights kept from the previous run" in line for line in second.log)
    assert WEIGHTS.reset("tab-test") == 1
    third, _ = run(doc, persist_weights=True, weights_scope="tab-test", run_id="c")
    assert not torch.equal(first.outputs["fc"]["tensor"], third.outputs["fc"]["tensor"])
    WEIGHTS.reset("tab-test")


def test_without_persist_weights_every_run_starts_fresh(walkthrough):
    """SP11: off by default, so every run starts fresh like an exported script."""
    doc = _with_linear(walkthrough)
    first, _ = run(doc, run_id="a")
    second, _ = run(doc, run_id="b")
    assert not torch.equal(first.outputs["fc"]["tensor"], second.outputs["fc"]["tensor"])


@pytest.mark.django_db(transaction=True)
def test_a_long_chain_writes_its_run_row_a_few_times_not_once_per_event(student, monkeypatch):
    """Run records cost O(1) per event: statuses and log rows are written in batches."""
    from apps.runs import recorder as recorder_module, service
    writes = []
    write = recorder_module.Recorder._write
    monkeypatch.setattr(recorder_module.Recorder, "_write", lambda self: writes.append(time.monotonic()) or write(self))
    nodes = [{"id": "start", "type": "Start"},
             {"id": "n0", "type": "TensorInput", "data": {"params": {"shape": "1,4", "value_mode": "ones"}}}]
    edges = [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "n0"}]
    for i in range(1, 400):
        nodes.append({"id": f"n{i}", "type": "ScalarMultiply", "data": {"params": {"scalar": 1.0}}})
        edges.append({"id": f"e{i}", "source": f"n{i-1}", "sourceHandle": "tensor", "target": f"n{i}",
                      "targetHandle": "tensor"})
    started = time.monotonic()
    run = service.wait_for(service.start_run(student, document.normalise({"nodes": nodes, "edges": edges})).pk)
    took = time.monotonic() - started
    assert run.status == "succeeded" and len(run.nodes) == 401 and run.nodes["n399"]["status"] == "completed"
    assert len(writes) <= 3 + took / recorder_module.Recorder.EVERY_S  # start, end, and one per 0.25 s at most


@pytest.mark.django_db(transaction=True)
def test_a_short_run_writes_its_run_row_once_at_its_end(student, monkeypatch):
    """A run that ends within 0.25 s of its insert costs one UPDATE, with its end in it."""
    from apps.runs import recorder as recorder_module, service
    writes = []
    write = recorder_module.Recorder._write
    monkeypatch.setattr(recorder_module.Recorder, "_write", lambda self: writes.append(dict(self.fields)) or write(self))
    # However slow the machine, the run ends "within 0.25 s", and no quiet stretch is flushed.
    monkeypatch.setattr(recorder_module.Recorder, "EVERY_S", 60)
    monkeypatch.setattr(recorder_module.FLUSHER, "watch", lambda recorder: None)
    doc = document.normalise({"nodes": [
        {"id": "start", "type": "Start"},
        {"id": "x", "type": "TensorInput", "data": {"params": {"shape": "1,2", "value_mode": "ones"}}}],
        "edges": [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "x"}]})
    run = service.wait_for(service.start_run(student, doc).pk)
    assert [w["status"] for w in writes] == ["succeeded"]
    assert run.status == "succeeded" and run.nodes["x"]["status"] == "completed"


@pytest.mark.django_db(transaction=True)
def test_a_row_the_flusher_could_not_write_is_written_on_its_next_round(student, monkeypatch):
    """A quiet stretch's write that fails (a locked database) is tried again, not left stale
    until the run's next event (a node that holds for minutes would show "queued" that long)."""
    from django.db import OperationalError

    from apps.runs import recorder as recorder_module
    from apps.runs.engine import events as ev
    from apps.runs.models import Run
    monkeypatch.setattr(recorder_module.Recorder, "EVERY_S", 0.05)
    # A flusher of its own: the server's thread may be in a long sleep another test set.
    monkeypatch.setattr(recorder_module, "FLUSHER", recorder_module.Flusher())
    write, failures = recorder_module.Recorder._write, []

    def flaky(self):
        if not failures:
            failures.append(1)
            raise OperationalError("database is locked")
        write(self)

    monkeypatch.setattr(recorder_module.Recorder, "_write", flaky)
    row = Run.objects.create(owner=student)
    recorder = recorder_module.Recorder(str(row.pk))
    recorder._record(ev.Event(ev.RUN_STARTED, str(row.pk)))   # kept, and left for the flusher to write
    recorder_module.FLUSHER.watch(recorder)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Run.objects.get(pk=row.pk).status != Run.Status.RUNNING:
        time.sleep(0.02)
    assert failures and Run.objects.get(pk=row.pk).status == Run.Status.RUNNING


@pytest.mark.django_db
def test_a_runs_start_and_end_are_when_they_happened_not_when_their_batch_was_read(student):
    """A worker sends a short run's events together: its duration still says how long it ran."""
    from apps.runs import recorder as recorder_module
    from apps.runs.engine import events as ev
    from apps.runs.models import Run
    row = Run.objects.create(owner=student)
    recorder = recorder_module.Recorder(str(row.pk))
    began = time.time() - 5
    recorder(ev.Event(ev.RUN_STARTED, str(row.pk), time=began))
    recorder(ev.Event(ev.RUN_COMPLETED, str(row.pk), time=began + 0.007))
    row.refresh_from_db()
    assert row.status == "succeeded" and row.started.timestamp() == pytest.approx(began, abs=1e-5)
    assert row.duration == pytest.approx(0.007, abs=1e-5)


def test_engine_threads_are_kept_between_runs_but_never_a_pool_whose_node_still_computes():
    """A finished run gives its threads back for the next; a node that ignored Stop keeps its
    pool out of use, and still_computing says so until it returns."""
    import threading as _threading
    from concurrent.futures import Future

    from apps.runs.engine.executor import _Threads
    threads = _Threads()
    pool = threads.take(2)
    threads.give_back(2, pool, [])
    assert threads.take(2) is pool and threads.take(2) is not pool
    release = _threading.Event()
    stuck: Future = pool.submit(release.wait)
    threads.give_back(2, pool, [stuck])
    assert threads.take(2) is not pool
    assert threads.still_computing(wait_s=0.01)
    release.set()
    assert not threads.still_computing(wait_s=1.0)



@register
class _Where(Node):
    """Test node: notes the thread it ran in; ``meet`` waits at a barrier for its sibling."""
    type = "test:Where"
    category = "Utility"
    inputs = (Port("tensor"),)
    outputs = (Port("tensor"),)
    threads: list[int] = []
    barrier = threading.Barrier(2, timeout=5)

    def run(self, ctx, params, tensor):
        self.threads.append(threading.get_ident())
        if params.get("meet"):
            self.barrier.wait()
        return {"tensor": tensor}


def _fan(*branches: list[dict]) -> dict:
    """Start → TensorInput, then each branch a chain of test:Where nodes (their params) from it."""
    nodes = [{"id": "start", "type": "Start"},
             {"id": "in", "type": "TensorInput", "data": {"params": {"shape": "2", "value_mode": "ones"}}}]
    edges = [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "in"}]
    for b, branch in enumerate(branches):
        previous = "in"
        for i, params in enumerate(branch):
            node = f"w{b}{i}"
            nodes.append({"id": node, "type": "test:Where", "data": {"params": params}})
            edges.append({"id": f"e{node}", "source": previous, "sourceHandle": "tensor", "target": node,
                          "targetHandle": "tensor"})
            previous = node
    return document.normalise({"nodes": nodes, "edges": edges})


def test_a_straight_line_of_nodes_runs_in_one_engine_thread():
    """A chain goes from node to node in its own thread, without handing each to another."""
    _Where.threads = []
    outcome, _ = run(_fan([{}, {}, {}, {}]))
    assert outcome.status == "succeeded"
    assert len(_Where.threads) == 4 and len(set(_Where.threads)) == 1
    assert _Where.threads[0] != threading.get_ident()


def test_independent_branches_run_side_by_side():
    """Two branches from one node run at once (each waits for the other at a barrier), and
    the run ends once both have."""
    _Where.threads, _Where.barrier = [], threading.Barrier(2, timeout=5)
    outcome, events = run(_fan([{"meet": True}, {}], [{"meet": True}, {}]), max_parallel=2)
    assert outcome.status == "succeeded", outcome.error
    assert len(set(_Where.threads)) == 2
    assert [k for k in kinds(events) if k in ev.TERMINAL] == [ev.RUN_COMPLETED]
