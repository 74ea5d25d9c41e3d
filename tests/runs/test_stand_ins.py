"""As many far-too-long runs as the pool has workers (four students of a 2-core server typing
1000 epochs where 5 were meant) do not hold the class back until their deadline: while runs
wait and every worker holds a long run, the run held longest is paused and a stand-in worker
takes the queue; once nothing waits, the paused run resumes, and the idle stand-in is kept
for the next run that would wait until a lane is free again. Real worker processes: one
worker and no spare, so one long run is "every worker"."""
from __future__ import annotations

from pathlib import Path

import pytest

from apps.runs import service, worker_start, workers
from apps.runs.models import Run
from tests.runs.test_workers import release, start, started_in, until
from tests.runs.worker_nodes import graph, stalled_worker

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pool(monkeypatch):
    monkeypatch.setattr(workers, "LONG_RUN_S", 0.0)   # every run counts as long at once
    pool = service.start_workers(1, spares=0)
    until(lambda: pool.idle() == 1, "the worker started")
    yield pool
    service.stop_workers()


def niceness(pid: int) -> set[int]:
    """The nice values of the process's threads (each thread has its own)."""
    return {int((task / "stat").read_text().rsplit(")", 1)[1].split()[16]) for task in Path(f"/proc/{pid}/task").iterdir()}


def stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP): its state in /proc is T."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def test_a_long_run_is_paused_for_a_stand_in_while_others_wait_and_resumes_after(pool, student, stranger, tmp_path):
    long_run = start(student, graph("test:Hold", path=str(tmp_path / "long")))
    held_by = started_in(tmp_path / "long")
    waiting = start(stranger, graph("test:Hold", path=str(tmp_path / "short")))
    stand_in = started_in(tmp_path / "short")   # by a stand-in, while the long run is paused
    assert stand_in != held_by and stopped(held_by)
    assert niceness(stand_in) == niceness(held_by) == {workers.NICE}   # it started at the server's, computes at NICE
    assert service.worker_usage()["paused"] == 1 and service.worker_usage()["computing"] == 1
    until(lambda: service.current(Run.objects.get(pk=long_run.pk)).paused, "the run's page reads it paused")
    release(tmp_path / "short")
    assert service.wait_for(waiting.pk).status == "succeeded"
    until(lambda: not stopped(held_by), "the long run resumed once nothing waited")
    until(lambda: not service.current(Run.objects.get(pk=long_run.pk)).paused, "the run's page reads it running")

    # The next run that would wait goes to the stand-in kept idle: no new worker to start.
    again = start(stranger, graph("test:Hold", path=str(tmp_path / "again")))
    assert started_in(tmp_path / "again") == stand_in and stopped(held_by)
    assert sorted(pool.pids()) == sorted([held_by, stand_in])
    release(tmp_path / "again")
    assert service.wait_for(again.pk).status == "succeeded"
    until(lambda: not stopped(held_by), "the long run resumed again")

    release(tmp_path / "long")
    long_run = service.wait_for(long_run.pk)
    assert long_run.status == "succeeded" and service.worker_usage()["paused"] == 0
    until(lambda: pool.pids() == [held_by], "the stand-in exited once the lane was free")
    told = [row["text"] for row in long_run.log if row["level"] == "warning"]
    assert told[0] == workers.PAUSED and told[1].startswith("Resumed after ") and told[2] == workers.PAUSED


def test_a_paused_run_can_be_stopped(pool, student, stranger, tmp_path):
    long_run = start(student, graph("test:Hold", path=str(tmp_path / "long")))
    held_by = started_in(tmp_path / "long")
    waiting = start(stranger, graph("test:Hold", path=str(tmp_path / "short")))
    started_in(tmp_path / "short")
    assert stopped(held_by)
    service.cancel_run(long_run)
    assert service.wait_for(long_run.pk).status == "cancelled"
    release(tmp_path / "short")
    assert service.wait_for(waiting.pk).status == "succeeded"


def test_a_stand_in_killed_while_it_starts_gives_the_paused_run_back_and_another_takes_the_queue(
        pool, student, stranger, tmp_path, monkeypatch):
    import os
    import signal
    monkeypatch.setattr(workers, "STAND_IN_RETRY_S", 0.5)
    stalled = []

    def start_worker(target, sock, *args, stand_in=False):
        """The first stand-in never becomes ready (it is killed while it starts); the others do."""
        process = worker_start.fork(stalled_worker if stand_in and not stalled else target, sock, *args)
        if stand_in and not stalled:
            stalled.append(process)
        return process

    monkeypatch.setattr(pool, "_start", start_worker)
    long_run = start(student, graph("test:Hold", path=str(tmp_path / "long")))
    held_by = started_in(tmp_path / "long")
    waiting = start(stranger, graph("test:Hold", path=str(tmp_path / "short")))
    first = until(lambda: stalled and stalled[0].pid, "a stand-in started")
    os.kill(first, signal.SIGKILL)
    until(lambda: first not in pool.pids(), "the pool saw it end")
    taken_by = started_in(tmp_path / "short")   # by the next stand-in, the long run paused again
    assert taken_by not in (first, held_by) and stopped(held_by)
    release(tmp_path / "short")
    assert service.wait_for(waiting.pk).status == "succeeded"
    release(tmp_path / "long")
    until(lambda: not stopped(held_by), "the long run resumed")
    long_run = service.wait_for(long_run.pk)
    assert long_run.status == "succeeded"
    told = [row["text"] for row in long_run.log if row["level"] == "warning"]
    assert told[0] == told[2] == workers.PAUSED and told[1].startswith("Resumed after ")


class FakeProcess:
    def __init__(self, pid: int):
        self.pid = pid


class FakeAssignment:
    def __init__(self, handed_over: float, run_id: str):
        self.handed_over, self.run_id, self.device, self.told = handed_over, run_id, "cpu", []

    def emit(self, event) -> None:
        self.told.append(event.text)
        assert event.data == {"paused": event.text == workers.PAUSED, "device": "cpu"}


def fake_pool(monkeypatch, computing: int, waiting: list[bool], freed: list | None = None, memory_mb: int = 0):
    """A pool of two workers and two spares, each holding a run since ``handed_over`` 0..3 (no
    processes: the signals, spawns and calls of ``on_free`` are recorded)."""
    freed = [] if freed is None else freed
    pool = workers.WorkerPool(2, memory_mb, 1, lambda: freed.append(True), spares=2, waiting=lambda: waiting[0])
    signals, spawned = [], []
    monkeypatch.setattr(workers, "_signal", lambda worker, sig: signals.append((worker.process.pid, sig)))
    monkeypatch.setattr(workers, "_tell", lambda worker, *message: signals.append((worker.process.pid, message[0])))
    monkeypatch.setattr(pool, "_spawn", lambda spare, stand_in=False: spawned.append(stand_in))
    for pid in range(computing):
        worker = workers._Worker(FakeProcess(pid), None, spare=pid >= 2)
        worker.ready = True
        worker.assignment = FakeAssignment(float(pid), f"r{pid}")
        pool._workers.append(worker)
    return pool, signals, spawned


def test_while_runs_wait_the_longest_held_run_is_paused_for_a_stand_in_at_most_half_the_lanes(monkeypatch):
    import signal
    pool, signals, spawned = fake_pool(monkeypatch, 4, waiting=[True])
    pool._relieve(now=10.0)
    assert signals == [(0, signal.SIGSTOP)] and spawned == [True] and pool.paused() == 1
    assert pool._workers[0].assignment.told == [workers.PAUSED]   # its student reads why it stands still
    stand_in = workers._Worker(FakeProcess(10), None, spare=False, stand_in=True)   # starting: nothing more
    pool._workers.append(stand_in)
    pool._relieve(now=10.1)
    assert len(signals) == 1
    stand_in.ready = True   # it took a run, which has become long too
    stand_in.assignment = FakeAssignment(5.0, "r10")
    pool._relieve(now=10.2)
    assert signals[-1] == (1, signal.SIGSTOP) and pool.paused() == 2
    stand_in.assignment = FakeAssignment(6.0, "r11")
    pool._relieve(now=10.3)   # half the four lanes are paused: no more
    assert len(signals) == 2 and pool.paused() == 2


def idle_stand_in(pool, pid: int = 10, since: float = 0.0) -> workers._Worker:
    stand_in = workers._Worker(FakeProcess(pid), None, spare=False, stand_in=True)
    stand_in.ready, stand_in.idle_since = True, since
    pool._workers.append(stand_in)
    return stand_in


def busy_stand_in(pool, pid: int, handed_over: float) -> workers._Worker:
    """A stand-in that took a waiting run, which has become a long one too."""
    stand_in = idle_stand_in(pool, pid)
    stand_in.assignment = FakeAssignment(handed_over, f"r{pid}")
    return stand_in


def test_once_nothing_waits_paused_runs_resume_within_the_lanes_and_the_stand_in_is_kept(monkeypatch):
    import signal
    waiting = [True]
    pool, signals, spawned = fake_pool(monkeypatch, 4, waiting)
    pool._relieve(now=10.0)   # worker 0 paused
    stand_in = busy_stand_in(pool, 10, handed_over=10.0)
    waiting[0] = False
    pool._relieve(now=11.0)   # the stand-in still computes: four lanes busy, nothing resumes
    assert signals == [(0, signal.SIGSTOP)]
    stand_in.assignment, stand_in.idle_since = None, 12.0
    pool._relieve(now=12.0)
    assert signals[1:] == [(0, signal.SIGCONT)] and pool.paused() == 0 and not stand_in.retiring
    assert pool._workers[0].assignment.told == [workers.PAUSED, "Resumed after 2 s paused"]
    assert pool._takers() == []   # four lanes compute: the idle stand-in takes nothing of its own accord
    pool._relieve(now=12.0 + workers.STAND_IN_IDLE_S)
    assert signals[-1] == (10, "exit") and stand_in.retiring   # idle too long: its memory goes back


def test_an_idle_stand_in_takes_the_next_run_that_would_wait_at_once(monkeypatch):
    import signal
    waiting, freed = [True], []
    pool, signals, spawned = fake_pool(monkeypatch, 4, waiting, freed)
    stand_in = idle_stand_in(pool)
    pool._relieve(now=10.0)
    assert signals == [(0, signal.SIGSTOP)] and spawned == [] and freed == [True]   # no new worker: the scheduler is told
    assert pool._takers() == [stand_in]


def test_a_pause_starts_no_stand_in_while_a_worker_is_idle(monkeypatch):
    """A paused run's worker was ended (its student pressed Stop) and replaced: with the lanes
    full, the new worker is idle, and the next pause hands the waiting run to it."""
    import signal
    freed = []
    pool, signals, spawned = fake_pool(monkeypatch, 4, [True], freed)
    replacement = workers._Worker(FakeProcess(20), None, spare=False)
    replacement.ready = True
    pool._workers.append(replacement)
    assert pool._takers() == []   # four lanes compute
    pool._relieve(now=10.0)
    assert signals == [(0, signal.SIGSTOP)] and spawned == [] and freed == [True]
    assert pool._takers() == [replacement]


def test_an_idle_stand_in_exits_once_a_lane_is_free_and_nothing_is_paused(monkeypatch):
    pool, signals, spawned = fake_pool(monkeypatch, 4, waiting=[False])
    stand_in = idle_stand_in(pool, since=9.0)
    pool._relieve(now=10.0)
    assert signals == [] and not stand_in.retiring   # every lane holds a long run: kept for the next
    pool._workers[1].assignment = None   # a long run ended
    pool._relieve(now=10.1)
    assert signals == [(10, "exit")] and stand_in.retiring


def test_with_a_memory_cap_runs_are_paused_while_they_hold_a_quarter_of_what_the_lanes_may_at_most(monkeypatch):
    """Four lanes of 1000 MB each: paused runs and the stand-in a pause starts may hold 2000 MB.
    Runs of 300 MB: more than half the lanes are paused (six students' far-too-long runs no
    longer hold the class back); never more than the lanes."""
    import signal
    mb = 2**20
    resident = {}
    monkeypatch.setattr(workers, "resident_bytes", lambda pid: resident.get(pid, 300 * mb))
    pool, signals, spawned = fake_pool(monkeypatch, 4, [True], memory_mb=1000)
    for worker in pool._workers:
        worker.idle_rss = 250 * mb
    for k in range(4):
        pool._relieve(now=10.0 + k)
        busy_stand_in(pool, 10 + k, handed_over=5.0 + k)
    assert [sig for _, sig in signals] == [signal.SIGSTOP] * 4 and pool.paused() == 4 and spawned == [True] * 4
    pool._relieve(now=20.0)
    assert pool.paused() == 4   # as many as the lanes: no more

    pool, signals, spawned = fake_pool(monkeypatch, 4, [True], memory_mb=1000)
    for worker in pool._workers:
        worker.idle_rss = 250 * mb
    resident.update({0: 900 * mb, 1: 900 * mb})   # runs that grew large
    pool._relieve(now=10.0)
    busy_stand_in(pool, 10, handed_over=5.0)
    pool._relieve(now=11.0)   # 900 + 900 MB paused and a stand-in's start would pass 2000 MB
    assert signals == [(0, signal.SIGSTOP)] and pool.paused() == 1


def test_a_paused_run_resumes_only_once_nothing_has_waited_for_a_while(monkeypatch):
    """A class presses Run in bursts: between two of its runs nothing waits for a moment, and
    the paused run does not start and stop again for each."""
    import signal
    waiting = [True]
    pool, signals, spawned = fake_pool(monkeypatch, 4, waiting)
    pool._relieve(now=10.0)   # worker 0 paused, a stand-in starts
    idle_stand_in(pool, since=10.2)
    waiting[0] = False
    pool._relieve(now=10.5)
    assert signals == [(0, signal.SIGSTOP)]
    pool._relieve(now=10.0 + workers.RESUME_QUIET_S)
    assert signals[1:] == [(0, signal.SIGCONT)]


def test_a_stand_in_that_never_starts_gives_its_paused_run_back(monkeypatch):
    """A stand-in that ends before it is ready (the machine out of memory) leaves no run paused
    for it, and for a while no run is paused for another: else one run after another would be
    paused for stand-ins that never come."""
    import signal
    pool, signals, spawned = fake_pool(monkeypatch, 4, [True])
    pool._relieve(now=10.0)
    assert signals == [(0, signal.SIGSTOP)] and spawned == [True]
    pool._stand_in_lost(now=10.5)
    assert signals[1:] == [(0, signal.SIGCONT)] and pool.paused() == 0
    assert pool._workers[0].assignment.told == [workers.PAUSED, "Resumed after 0 s paused"]
    pool._relieve(now=11.0)
    assert len(signals) == 2 and spawned == [True]   # runs wait, but no stand-in is tried again yet
    pool._relieve(now=10.5 + workers.STAND_IN_RETRY_S)
    assert signals[-1] == (0, signal.SIGSTOP) and spawned == [True, True]
