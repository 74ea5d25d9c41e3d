"""How run workers start (apps/runs/worker_start.py): forked from one forkserver that has
imported torch, each with fresh random streams and nothing of the forkserver's or another
worker's; and when no run worker can start (a broken install), runs fail with a message
instead of waiting in the queue forever."""
from __future__ import annotations

import os
import pickle
import signal
import socket
from pathlib import Path

import pytest

from apps.graphs import document
from apps.runs import service, worker_start, workers
from tests.runs.test_workers import until
from tests.runs.worker_nodes import broken_worker, report, running, sigint_ignored


def reported(ours: socket.socket) -> dict:
    """What a ``report`` worker told (its socket's other end is ``ours``), up to its end of it."""
    data = b""
    while chunk := ours.recv(65536):
        data += chunk
    return pickle.loads(data)


def forked_report(threads: int = 3) -> tuple[worker_start.Forked, socket.socket, dict]:
    ours, theirs = socket.socketpair()
    process = worker_start.fork(report, theirs, threads)
    theirs.close()
    return process, ours, reported(ours)


def let_go(process: worker_start.Forked, ours: socket.socket) -> None:
    ours.close()   # its recv ends: it exits
    process.join(30)
    assert process.exitcode == 0 and not process.is_alive()


def test_workers_are_forked_from_one_forkserver_each_with_fresh_random_streams_and_only_its_own_socket():
    first, first_end, a = forked_report()
    second, second_end, b = forked_report()
    try:
        assert a["parent"] == b["parent"] == worker_start.forkserver_pid() != os.getpid()
        assert a["args"] == 3
        for stream in ("torch", "numpy", "python"):   # the forkserver's generators would draw the same for both
            assert a[stream] != b[stream], stream
        # its own end of the server's socket, and nothing else: not the forkserver's control
        # socket, nor the status socket of another worker (or its own)
        assert a["sockets"] == b["sockets"] == 1
        assert not a["cuda"] and a["sigint_ignored"]   # Ctrl+C in the server's terminal: the server ends workers
    finally:
        let_go(first, first_end)
        let_go(second, second_end)


def test_the_forkserver_ignores_ctrl_c_and_forks_with_one_thread_and_no_cuda():
    process, ours, told = forked_report()
    let_go(process, ours)
    forkserver = worker_start.forkserver_pid()
    assert sigint_ignored(forkserver) and not told["cuda"]
    # numpy's OpenBLAS threads stop themselves at a fork, and nothing else may run a thread there
    assert len(os.listdir(f"/proc/{forkserver}/task")) == 1


def test_a_workers_end_is_told_as_multiprocessing_tells_it_its_exit_code_or_minus_the_signal():
    ours, theirs = socket.socketpair()
    process = worker_start.fork(broken_worker, theirs, 1)
    theirs.close()
    ours.close()
    process.join(30)
    assert process.exitcode == 3 and not process.is_alive()
    with pytest.raises(ProcessLookupError):   # the pool's _signal takes this as "it ended meanwhile"
        process.send_signal(signal.SIGSTOP)
    process, ours, _ = forked_report()
    process.kill()
    process.join(30)
    assert process.exitcode == -signal.SIGKILL and not running(process.pid)


def test_each_worker_maps_a_shared_memory_arena_of_its_own():
    pool = workers.WorkerPool(2, 0, 1, lambda: None).start()
    try:
        until(lambda: pool.idle() == 2, "both workers started")
        arenas = [{line.split()[4] for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
                   if "codefyui-arena" in line} for pid in pool.pids()]
        assert all(len(inodes) == 1 for inodes in arenas) and arenas[0] != arenas[1]
    finally:
        pool.close()


def test_a_forkserver_that_ended_is_started_again_by_the_next_worker_start():
    process, ours, _ = forked_report()
    let_go(process, ours)
    old = worker_start.forkserver_pid()
    os.kill(old, signal.SIGKILL)   # as the out-of-memory killer would
    until(lambda: not running(old), "the forkserver ended")
    process, ours, told = forked_report()
    try:
        assert told["parent"] == worker_start.forkserver_pid() != old
    finally:
        let_go(process, ours)


@pytest.mark.django_db(transaction=True)
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
