"""Runs in real worker processes: two students at once (one seeded), a run past its memory
cap, a Stop that ends a node stuck in a loop, a worker killed from outside, the fair queue.
One pool serves the whole module."""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
import torch

from apps.graphs import document
from apps.runs import engine, service, worker_process, worker_start, workers
from apps.runs.models import Run
from apps.runs.store import MemoryCaptureStore
from codefyui import conf
from tests.runs.worker_nodes import graph, running, saver_graph, sigint_ignored

pytestmark = pytest.mark.django_db(transaction=True)


def until(condition, what: str, timeout: float = 60.0):
    """Wait until ``condition()`` holds (its value), checking it again every 20 ms, and fail
    after ``timeout``: for what no event tells (a file a node wrote, a process's state)."""
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.02)
    return found


@pytest.fixture(scope="module")
def pool():
    pool = service.start_workers(2, spares=0)  # spares: tests/runs/test_spare_workers.py
    until(lambda: pool.free() == 2, "both workers started")
    yield pool
    service.stop_workers()


@pytest.fixture
def ready(pool):
    """Both workers idle before and after the test (an ended worker is replaced)."""
    until(lambda: pool.free() == 2, "both workers idle")
    yield pool
    until(lambda: pool.free() == 2, "both workers idle again")


def start(user, doc, **options) -> Run:
    return service.start_run(user, document.normalise(doc), overrides=options)


def started_in(path: Path) -> int:
    """The process id the test node wrote when it started."""
    pid_file = Path(f"{path}.pid")
    until(pid_file.exists, f"started {path.name}")
    return int(until(pid_file.read_text, f"wrote {pid_file.name}"))


def release(path: Path) -> None:
    Path(f"{path}.go").touch()


def test_a_seeded_and_an_unseeded_run_of_two_students_compute_at_the_same_time(ready, student, stranger, tmp_path):
    seeded = start(student, graph("test:Hold", path=str(tmp_path / "a")), seed=7, deterministic=True)
    unseeded = start(stranger, graph("test:Hold", path=str(tmp_path / "b")))
    pids = {started_in(tmp_path / "a"), started_in(tmp_path / "b")}  # both hold at once
    assert len(pids) == 2 and pids <= set(ready.pids()) and os.getpid() not in pids
    release(tmp_path / "a")
    release(tmp_path / "b")
    for run in (seeded, unseeded):
        run = service.wait_for(run.pk)
        assert run.status == "succeeded", run.error
        assert run.nodes["node"]["summary"]["tensor"]["shape"] == [2]


def test_a_run_past_the_memory_cap_fails_naming_the_node_and_the_limit(ready, student, tmp_path):
    ready.memory_max_mb = 96
    try:
        run = service.wait_for(start(student, graph("test:Hog", path=str(tmp_path / "hog"), mb=1024)).pk)
    finally:
        ready.memory_max_mb = conf.RUN_MEMORY_MAX_MB
    assert run.status == "failed"
    assert run.error == ("Hog (node) needed more memory than a run may use (96 MB, CODEFYUI_RUN_MEMORY_MAX_MB), "
                         "so the run was stopped.")
    assert run.nodes["node"] == {"status": "error", "error": run.error}
    assert run.log[-1]["text"] == f"Execution error: {run.error}"


def test_stop_ends_a_node_stuck_in_a_long_loop(ready, student, tmp_path):
    run = start(student, graph("test:Spin", path=str(tmp_path / "spin")))
    pid = started_in(tmp_path / "spin")
    service.cancel_run(Run.objects.get(pk=run.pk))
    run = service.wait_for(run.pk, timeout=10)
    assert run.status == "cancelled" and run.error == "Execution cancelled"
    until(lambda: not running(pid), "ended the computation itself")   # killed: the kernel takes its memory back


def test_a_run_past_its_deadline_fails_and_the_computation_ends(ready, student, tmp_path, monkeypatch):
    monkeypatch.setattr(conf, "RUN_TIMEOUT_S", 1)
    run = start(student, graph("test:Spin", path=str(tmp_path / "spin")))
    pid = started_in(tmp_path / "spin")
    run = service.wait_for(run.pk, timeout=10)
    assert run.status == "failed"
    assert run.error == "The run took longer than 1 seconds (CODEFYUI_RUN_TIMEOUT_S) and was stopped."
    until(lambda: not Path(f"/proc/{pid}").exists(), "ended the worker still computing")


def test_a_worker_killed_from_outside_fails_only_its_run(ready, student, stranger, tmp_path):
    doomed = start(student, graph("test:Hold", path=str(tmp_path / "a")))
    other = start(stranger, graph("test:Hold", path=str(tmp_path / "b")))
    os.kill(started_in(tmp_path / "a"), signal.SIGKILL)
    started_in(tmp_path / "b")
    doomed = service.wait_for(doomed.pk)
    assert doomed.status == "failed" and doomed.error == "The run's worker stopped unexpectedly; run it again"
    assert service.current(Run.objects.get(pk=other.pk)).status == "running"
    release(tmp_path / "b")
    assert service.wait_for(other.pk).status == "succeeded"


def test_ctrl_c_in_the_servers_terminal_leaves_a_workers_run_to_finish(ready, student, tmp_path):
    """Ctrl+C reaches every process of the server's group; a worker leaves its ending to the
    server instead of dying mid-run with a traceback."""
    run = start(student, graph("test:Hold", path=str(tmp_path / "a")))
    worker = started_in(tmp_path / "a")
    assert sigint_ignored(worker)   # so the kernel discards the SIGINT below at once: none is left to arrive
    os.kill(worker, signal.SIGINT)
    release(tmp_path / "a")
    assert service.wait_for(run.pk).status == "succeeded"
    assert running(worker) and worker in ready.pids()   # still the pool's, not ended and replaced


def test_runs_are_taken_round_robin_across_students_and_each_may_queue_three(ready, student, stranger, tmp_path,
                                                                             monkeypatch, client):
    monkeypatch.setattr(conf, "MAX_CONCURRENT_RUNS", 1)
    first = start(student, graph("test:Hold", path=str(tmp_path / "first")))
    started_in(tmp_path / "first")
    tiny = graph("test:Hold", path=str(tmp_path / "tiny"))
    release(tmp_path / "tiny")
    queued = [start(student, tiny), start(student, tiny), start(stranger, tiny), start(student, tiny)]
    assert [service.queue_place(r) for r in queued] == [1, 3, 2, 4]
    client.force_login(stranger)
    assert "Queued (2nd in the queue)" in client.get("/editor/").content.decode()  # the Runs panel
    with pytest.raises(service.RunRefused) as refused:
        start(student, tiny)
    assert refused.value.problems == [
        "You already have 3 runs waiting in the queue (CODEFYUI_MAX_QUEUED_RUNS_PER_USER is 3). "
        "Wait until one of them starts, or stop one, then run again."]
    release(tmp_path / "first")
    runs = [service.wait_for(r.pk) for r in [first, *queued]]
    assert all(r.status == "succeeded" for r in runs), [r.error for r in runs]
    started = sorted(runs, key=lambda r: r.started)
    assert [r.pk for r in started] == [r.pk for r in (first, queued[0], queued[2], queued[1], queued[3])]


def test_the_runs_panel_shows_what_a_runs_recorder_knows_before_its_row_is_written(ready, student, tmp_path, client):
    """A run's row is written at most every 0.25 s (a short run: once, at its end): the Runs
    panel shows a started run as running even while its row still says queued, and filters it so."""
    run = start(student, graph("test:Hold", path=str(tmp_path / "a")))
    started_in(tmp_path / "a")
    Run.objects.filter(pk=run.pk).update(status=Run.Status.QUEUED)   # the row as it may be for 0.25 s
    client.force_login(student)
    page = client.get("/editor/").content.decode()
    assert '<td class="status-running">Running</td>' in page
    # and its filters go by the same: it is listed under Running, not under Queued
    assert '<td class="status-running">Running</td>' in client.get("/editor/?runs=running").content.decode()
    assert 'class="status-' not in client.get("/editor/?runs=queued").content.decode()
    release(tmp_path / "a")
    assert service.wait_for(run.pk).status == "succeeded"


def test_a_run_in_a_worker_saves_in_its_owners_files(ready, student, stranger):
    """The run options carry the owner's folder and quota into the worker process."""
    run = service.wait_for(start(student, saver_graph("tiny.pt")).pk)
    assert run.status == "succeeded", run.error
    assert [f.name for f in service.user_files(student.pk).list()] == ["tiny.pt"]
    assert service.user_files(stranger.pk).list() == []


def test_an_environment_made_in_a_worker_crosses_into_the_servers_store(ready, student):
    """EnvWrapper's env (a gymnasium environment, ANY) is captured in the worker and pickled across."""
    from apps.runs.store import get_store

    doc = graph("EnvWrapper", env_name="CartPole-v1")
    doc["nodes"].append({"id": "dqn", "type": "DQN", "data": {"params": {"hidden_dim": 8}}})
    doc["edges"].append({"id": "s", "source": "node", "sourceHandle": "observation", "target": "dqn",
                         "targetHandle": "state"})
    run = service.wait_for(start(student, doc, seed=4).pk)
    assert run.status == "succeeded", run.error
    env = get_store().get(str(run.pk), "node", "env").value
    assert repr(env).startswith("CartPole-v1 environment") and env.step(0)[0].shape == (4,)
    assert get_store().get(str(run.pk), "dqn", "action").value.shape == (2,)


# -- after "Recording stopped" (no worker process needed) ------------------------------------------

def test_once_the_store_stops_recording_a_worker_sends_only_the_names_of_later_ports(walkthrough):
    sent, unrecorded = [], threading.Event()

    def send(kind, *payload):
        if kind in ("captures", "refused"):
            sent.extend((kind, item[0]) for item in payload[0])
            unrecorded.set()  # as the server says after refusing the first capture

    plan = engine.plan_run(document.normalise(walkthrough))
    workers.run_job(workers.Job(plan, engine.RunOptions(run_id="r1", seed=1)), threading.Event(), send, unrecorded)
    assert sent == [("captures", "input"), ("refused", "reshape"), ("refused", "softmax"), ("refused", "print")]


def test_the_server_tells_the_worker_once_its_store_refuses_and_names_later_ports_refused(walkthrough):
    store = MemoryCaptureStore(max_bytes=1024)
    plan = engine.plan_run(document.normalise(walkthrough))
    logs = []
    assignment = workers.Assignment(workers.Job(plan, engine.RunOptions(run_id="r1")), logs.append, store, None,
                                    lambda a: None)
    assignment.receive("captures", [("input", "tensor", torch.ones(1024))])
    assert assignment.unrecorded.is_set() and "Recording stopped" in logs[0].text
    assignment.receive("refused", [("reshape", "tensor")])
    assert store.refused("r1", "reshape", "tensor") and store.get("r1", "reshape", "tensor") is None


def test_gradients_cross_from_the_worker_into_the_store(ready, student):
    """GR1: with Capture gradients on, a run in a worker process keeps its output and weight
    gradients and the run's target in the server's capture store (shared memory)."""
    from apps.runs.engine import gradients as gr
    from apps.runs.store import get_store
    from tests.runs.test_gradients import INPUT, chain

    doc = chain(INPUT, ("Linear", {"in_features": 4, "out_features": 2}), ("BackwardOnce", {}))
    run = service.wait_for(start(student, doc, gradients=True).pk)
    assert run.status == "succeeded", run.error
    store, key = get_store(), str(run.pk)
    assert store.get(key, gr.RUN, gr.TARGET).value["ran"] is True
    assert store.get(key, "n1", gr.weight_port("bias")).value.tolist() == [3.0, 3.0]
    assert store.get(key, "n0", gr.output_port("tensor")).value.shape == (3, 4)
    assert [row["name"] for row in store.get(key, gr.RUN, gr.LAYERS).value] == ["Linear"]


def test_a_script_node_runs_in_a_sandbox_below_its_worker(ready, student, monkeypatch):
    """PythonScript's code runs below the run worker, in a PID namespace of its own: it sees
    none of the server's or the workers' processes (the server itself refuses scripts)."""
    monkeypatch.setattr(conf, "SCRIPT_NODES", True)
    code = "import os\ndef run(inputs, params):\n    print('pid', os.getpid())\n    return {'out1': torch.arange(3)}\n"
    doc = graph("PythonScript", code=code)
    doc["nodes"][1]["data"]["label"] = "Script"
    run = service.wait_for(start(student, doc).pk)
    assert run.status == "succeeded", run.error
    pid = int(next(line for line in (e["text"] for e in run.log) if line.startswith("pid")).split()[1])
    assert pid < 10 and pid not in ready.pids()
    assert run.nodes["node"]["summary"]["out1"]["shape"] == [3]


# -- what a run sends leaves a worker in batches (no worker process needed) ------------------------

def test_a_workers_messages_leave_in_order_in_batches_and_a_runs_end_with_its_done():
    from apps.runs.engine import events as ev
    sent: list[tuple] = []
    went = threading.Event()
    outbox = worker_process._Outbox(lambda *message: sent.append(message) or went.set(), "r1")
    outbox.post("events", [ev.Event(ev.RUN_STARTED, "r1")])
    outbox.post("captures", [("n1", "out", torch.ones(2))])
    outbox.post("cache", "key", {"out": torch.ones(2)}, [])
    outbox.post("events", [ev.Event(ev.NODE_COMPLETED, "r1", "n1")])
    assert went.wait(10)   # the outboxes' thread sent what waited, LINGER_S after the first post
    assert [kind for kind, _ in sent] == ["batch"]  # one message
    assert [m[0] for m in sent[0][1]] == ["events", "captures", "cache", "events"]  # in the order made
    outbox.post("events", [ev.Event(ev.LOG, "r1")])
    outbox.post("events", [ev.Event(ev.RUN_COMPLETED, "r1")])
    outbox.close(last=("done", "r1"))   # as the worker closes it, at once after the run
    assert len(sent) == 2 and [m[0] for m in sent[-1][1]] == ["events", "events", "done"]  # one message


def test_a_batch_leaves_out_the_start_of_a_node_that_ends_in_it_and_keeps_one_stillrunning(monkeypatch):
    from apps.runs.engine import events as ev
    monkeypatch.setattr(worker_process._Outbox, "LINGER_S", 60)   # one batch, sent by close()
    sent: list[tuple] = []
    outbox = worker_process._Outbox(lambda *message: sent.append(message), "r1")
    for kind, node in [(ev.RUN_STARTED, None), (ev.NODE_RUNNING, "a"), (ev.PROGRESS, "a"), (ev.NODE_COMPLETED, "a"),
                       (ev.NODE_RUNNING, "b"), (ev.NODE_ERROR, "b"), (ev.NODE_RUNNING, "loop"),
                       (ev.NODE_COMPLETED, "loop"), (ev.NODE_RUNNING, "loop"), (ev.NODE_RUNNING, "c")]:
        outbox.post("events", [ev.Event(kind, "r1", node)])
    outbox.close()
    events = [e for kind, payload in sent[0][1] for e in payload]
    assert [(e.kind, e.node_id) for e in events] == [
        (ev.RUN_STARTED, None), (ev.PROGRESS, "a"), (ev.NODE_COMPLETED, "a"), (ev.NODE_ERROR, "b"),
        (ev.NODE_COMPLETED, "loop"), (ev.NODE_RUNNING, "loop"), (ev.NODE_RUNNING, "c")]  # still running: kept
    outbox.post("events", [ev.Event(ev.NODE_COMPLETED, "r1", "c")])
    outbox.post("events", [ev.Event(ev.RUN_COMPLETED, "r1")])
    outbox.close()
    assert [e.kind for _, payload in sent[-1][1] for e in payload] == [ev.NODE_COMPLETED, ev.RUN_COMPLETED]


def test_the_layers_a_run_keeps_reach_the_server_before_its_end():
    """Persist weights: a run started the moment the last one ends continues from its layers."""
    from apps.runs.engine import events as ev
    from tests.conftest import example

    doc = document.normalise(example("cnn"))
    options = engine.RunOptions(run_id="r1", **{**service.run_options(doc, {}), "persist_weights": True},
                                weights_scope="tab-order")
    sent: list[tuple] = []
    outbox = worker_process._Outbox(lambda *message: sent.append(message), "r1")
    try:
        workers.run_job(workers.Job(service.plan(doc), options), threading.Event(),
                        lambda *message: sent.append(message), outbox=outbox)
        outbox.close(last=("done", "r1"))
    finally:
        engine.WEIGHTS.reset("tab-order")
    ends = [i for i, (kind, *payload) in enumerate(sent) if kind == "batch"
            and any(m[0] == "events" and m[1][-1].kind == ev.RUN_COMPLETED for m in payload[0])]
    weights = [i for i, (kind, *_) in enumerate(sent) if kind == "weights"]
    assert weights and ends and weights[0] < ends[0] and sent[ends[0]][1][-1] == ("done", "r1")
    assert len(sent[weights[0]][2]) == 2   # the Conv2d and the Linear


def test_an_output_that_cannot_cross_is_named_and_the_rest_of_the_batch_still_goes():
    from apps.runs.engine import events as ev
    sent: list[tuple] = []

    def send(*message):
        if "lambda" in repr(message):  # as pickling a function fails on the wire
            raise TypeError("cannot pickle 'function' object")
        sent.append(message)

    outbox = worker_process._Outbox(send, "r1")
    outbox.post("captures", [("n1", "ok", 1), ("n1", "bad", lambda: 0)])
    outbox.post("cache", "key", {"bad": lambda: 0}, [])
    outbox.post("events", [ev.Event(ev.RUN_COMPLETED, "r1")])
    outbox.close(last=("done", "r1"))
    assert sent[0] == ("captures", [("n1", "ok", 1)])
    warning = sent[1][1][0]
    assert (warning.kind, warning.node_id, warning.text) == (ev.LOG, "n1", "The output 'bad' could not be recorded (TypeError)")
    assert sent[2][0] == "events" and sent[2][1][0].kind == ev.RUN_COMPLETED  # the cache entry is simply not cached
    assert sent[3] == ("done", "r1") and len(sent) == 4                       # the worker's end goes still


def test_a_replacement_started_while_the_pool_closes_is_ended_too():
    """Else it would wait, idle, until the server exits."""
    started = []

    def start(*args, **kwargs):
        started.append(worker_start.fork(*args, **kwargs))
        return started[-1]

    pool = workers.WorkerPool(1, 0, 1, lambda: None, start=start)   # not started: _spawn stands for a replacement
    pool._closing = True   # close() has run and seen no worker
    pool._spawn(spare=False)
    started[0].join(30)   # until the forkserver tells its end
    assert started[0].exitcode == -signal.SIGKILL and not running(started[0].pid)


