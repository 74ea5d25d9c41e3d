"""How a run worker starts: forked from a forkserver that has imported torch, the engine and
the node library once, so a new worker (at start-up, after Stop, a timeout, a crash or the
memory cap, a stand-in) costs a fork and its own set-up, not an interpreter importing torch
(~2.5 CPU-seconds, 3-5 s on a busy 2-core machine; bench/worker_start.py).

The forkserver is a process of its own, started by exec (``python -c _BOOT``), so it is
fresh and single-threaded whatever the server has started by then (Django's and Channels'
threads, the pool's): forking the server itself would copy locks other threads hold. It
ignores SIGINT from its first line (Ctrl+C in the server's terminal reaches the whole
process group; the server ends its workers), imports worker_process.py and runs the
element limit's warm-up, freezes that heap beyond the cyclic collector, and then only
forks, on the server's request, and tells the server each child's pid and exit code. It
starts no thread and never initialises CUDA: a fork copies only the calling thread, and a
forked CUDA context is unusable (``_fork``'s guard refuses to fork otherwise; numpy's
OpenBLAS threads stop themselves at each fork). It lives as long as the server, which
starts it with its first worker; one that died is started again by the next start.

What each worker makes its own after the fork: fresh random streams (torch's, numpy's;
Python's reseeds itself), its torch thread count and deterministic flag (worker_main, the
run), its shared-memory arena (made in worker_main, after the fork: no two workers ever map
one), its memory cap (the server counts each worker's own resident growth from /proc), and
its priority (it starts at the server's and lowers its own once ready).

Not multiprocessing's forkserver: a child of that one runs the server's main module again
(``__mp_main__``: Uvicorn's or Daphne's imports, for every worker) and unpickles its Process
before it starts. ``spawn`` (a fresh interpreter per worker, as before this module) is kept
as the fallback, and as the bench's baseline.
"""
from __future__ import annotations

import array
import atexit
import functools
import gc
import importlib
import logging
import os
import pickle
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import weakref
from multiprocessing.context import SpawnProcess
from typing import Any, Callable

log = logging.getLogger("codefyui.workers")

PRELOAD = ("apps.runs.worker_process",)   # what a worker runs: torch, the engine, the node library
_BOOT = ("import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); import sys; sys.path[:] = sys.argv[2:]; "
         "from apps.runs.worker_start import serve; serve(int(sys.argv[1]))")
_INT = 4   # a pid or an exit code, as the forkserver sends them
_FDS = 2   # at most, with one message: a worker's socket and its status socket


# -- the server's side --------------------------------------------------------------------

class Forked:
    """A worker forked by the forkserver, as its pool sees it: what the pool used of a
    multiprocessing.Process (pid, is_alive, kill, join, exitcode), and send_signal. The
    forkserver is its parent: it tells, over ``status``, the pid with a pidfd (a signal sent
    through it can never reach a process that took the pid later), then the exit code. The
    pid is None until the forkserver has forked it (a start queues behind the forkserver's
    own start at first), and stays None if it never does (the forkserver ended)."""

    def __init__(self, status: socket.socket):
        self._status = status
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._pidfd: int | None = None
        self._told_end = False        # the exit code came, or the forkserver is gone
        self.exitcode: int | None = None

    @property
    def pid(self) -> int | None:
        if self._pid is None:
            self._take()
        return self._pid

    def _take(self) -> None:
        """Read what the forkserver has told so far, without waiting."""
        with self._lock:
            while not self._told_end:
                try:
                    data, fds = _receive(self._status, _INT, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    return
                except OSError:
                    data, fds = b"", []
                if len(data) != _INT:   # the forkserver ended, or never forked this one
                    self._told_end = True
                elif self._pid is None:
                    self._pid = int.from_bytes(data, "big", signed=True)
                    if fds:
                        self._pidfd = fds[0]
                        weakref.finalize(self, os.close, fds[0])
                else:
                    self.exitcode = int.from_bytes(data, "big", signed=True)
                    self._told_end = True

    def _ended(self) -> bool:
        self._take()
        if self.exitcode is not None or (self._told_end and self._pidfd is None):
            return True
        return self._pidfd is not None and _readable(self._pidfd, 0)   # a pidfd reads ready once the process ended

    def is_alive(self) -> bool:
        return not self._ended()

    def join(self, timeout: float | None = None) -> None:
        """Wait until it has ended (the forkserver told its exit code) or ``timeout`` passed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._told_end and _readable(self._status, _left(deadline)):
            self._take()
        if self.exitcode is None and self._pidfd is not None:   # the forkserver is gone: ask the process
            _readable(self._pidfd, _left(deadline))

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def send_signal(self, sig: int) -> None:
        """ProcessLookupError once it has ended (or when it never started)."""
        deadline = time.monotonic() + 5
        while self.pid is None and not self._told_end and _readable(self._status, _left(deadline)):
            pass   # not forked yet: the forkserver is still starting
        if self._ended() or self._pid is None:
            raise ProcessLookupError(self._pid)
        if self._pidfd is not None:
            signal.pidfd_send_signal(self._pidfd, sig)
        else:
            os.kill(self._pid, sig)


class Forkserver:
    """The server's handle on its forkserver (one per server process: ``fork``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._control: socket.socket | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self, target: Callable, sock: socket.socket, *args: Any) -> Forked:
        """A worker forked from the forkserver, running ``target(sock, *args)`` (``target`` by
        module and name; ``args`` pickled). ``sock`` may be closed once this returns."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        request = pickle.dumps((target.__module__, target.__qualname__, args))
        try:
            with self._lock:
                self._send(request, [sock.fileno(), theirs.fileno()])
        except OSError:   # it could not be started: the worker reads as ended before it was ready
            log.exception("could not start the run workers' forkserver")
        finally:
            theirs.close()
        return Forked(ours)

    def _send(self, request: bytes, fds: list[int]) -> None:
        for attempt in range(2):
            if self._process is None or self._process.poll() is not None:
                self._launch()
            try:
                socket.send_fds(self._control, [request], fds)
                return
            except OSError:
                if attempt:
                    raise
                self._process.kill()   # it is ending (killed, out of memory): a fresh one takes the request
                self._process.wait()

    def _launch(self) -> None:
        if self._process is not None:
            log.error("the run workers' forkserver ended (code %s): starting another", self._process.returncode)
            self._control.close()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._process = subprocess.Popen([sys.executable, "-c", _BOOT, str(theirs.fileno()), *sys.path],
                                             pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._control = ours

    def close(self) -> None:
        """End it (the server's exit): it exits once its control socket closes."""
        with self._lock:
            if self._process is None:
                return
            self._control.close()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
            self._process = None


_FORKSERVER = Forkserver()
atexit.register(_FORKSERVER.close)


def fork(target: Callable, sock: socket.socket, *args: Any, stand_in: bool = False) -> Forked | Spawned:
    """Start a run worker: forked from this server's forkserver. Every worker starts at the
    server's CPU priority, a stand-in as any other: its start is a fork and ~0.1 CPU-s, and
    it lowers its own priority once ready (worker_process._lower_priority). Spawned instead
    where the kernel has no pidfds (Linux before 5.3): the forkserver watches its workers by them."""
    if not _pidfds():
        return spawn(target, sock, *args, stand_in=stand_in)
    return _FORKSERVER.start(target, sock, *args)


@functools.cache
def _pidfds() -> bool:
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        log.warning("no pidfds on this system: run workers start as fresh interpreters (seconds each)")
        return False
    return hasattr(signal, "pidfd_send_signal")


def forkserver_pid() -> int | None:
    return _FORKSERVER.pid


class Spawned(SpawnProcess):
    def send_signal(self, sig: int) -> None:
        os.kill(self.pid, sig)


def spawn(target: Callable, sock: socket.socket, *args: Any, stand_in: bool = False) -> Spawned:
    """Start a run worker as before the forkserver: a fresh interpreter (multiprocessing's
    spawn) that imports torch for seconds. A worker that is no stand-in starts at NICE (its
    import would slow the server's page requests); a stand-in at the server's priority, since
    a student's run waits for it. The fallback, and bench/worker_start.py's baseline."""
    from .worker_process import NICE

    process = Spawned(target=target, args=(sock, *args), name="codefyui-run-worker")
    process.start()
    if not stand_in:
        os.setpriority(os.PRIO_PROCESS, process.pid, NICE)
    return process


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _receive(sock: socket.socket, size: int, flags: int = 0) -> tuple[bytes, list[int]]:
    """One message and the descriptors that came with it, not inherited by a child (a
    script's sandbox). (Python 3.11's socket.recv_fds drops its flags.)"""
    data, ancillary, _, _ = sock.recvmsg(size, socket.CMSG_LEN(_FDS * 4), flags | socket.MSG_CMSG_CLOEXEC)
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def _readable(fd, timeout: float | None) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(None if timeout is None else timeout * 1000))


# -- the forkserver -----------------------------------------------------------------------

def serve(control_fd: int) -> None:
    """The forkserver's life (``_BOOT`` calls it, SIGINT already ignored): preload, then fork
    a worker for each request until the server's control socket closes."""
    control = socket.socket(fileno=control_fd)
    for module in PRELOAD:
        importlib.import_module(module)
    from .engine import warm_up

    warm_up()   # what the element limit's first meta run loads (torch._dynamo: seconds), once for all workers
    gc.collect()
    gc.freeze()   # forked workers do not copy these pages for the collector's bookkeeping
    children: dict[int, tuple[int, socket.socket]] = {}   # pidfd -> (pid, status socket)
    poller = select.poll()
    poller.register(control, select.POLLIN)
    while True:
        for fd, _ in poller.poll():
            if fd != control.fileno():
                _reap(children, poller, fd)
                continue
            try:
                request, fds = _receive(control, 64 * 1024)
            except OSError:
                request, fds = b"", []
            if not request:   # the server is gone; its workers exit once their sockets close
                os._exit(0)
            child = _fork(control, children, request, fds)
            if child is not None:
                children[child[0]] = child[1:]
                poller.register(child[0], select.POLLIN)


def _fork(control: socket.socket, children: dict, request: bytes, fds: list[int]) -> tuple | None:
    """Fork one worker: (its pidfd, pid, status socket), or None when none could be forked
    (the server then reads its worker as ended before it was ready)."""
    if len(fds) != 2:
        for fd in fds:
            os.close(fd)
        return None
    wire_fd, status_fd = fds
    status = socket.socket(fileno=status_fd)
    problem = _unsafe_to_fork()
    if problem:
        log.error("the run workers' forkserver %s: it forks no worker", problem)
        os.close(wire_fd)
        status.close()
        return None
    module, name, args = pickle.loads(request)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError:   # out of memory or processes: this start fails, the next may not
        log.exception("the run workers' forkserver could not fork a worker")
        pid = -1
    if pid == 0:
        _become_worker(control, children, status, wire_fd, module, name, args)
    os.close(wire_fd)
    if pid < 0:
        status.close()
        return None
    pidfd = os.pidfd_open(pid)
    try:
        socket.send_fds(status, [pid.to_bytes(_INT, "big", signed=True)], [pidfd])
    except OSError:
        pass   # the server let go of it meanwhile (its pool closed): it exits at its socket's end
    return pidfd, pid, status


def _unsafe_to_fork() -> str:
    """Why this process must not fork now ("" when it may)."""
    if threading.active_count() > 1:
        return f"has {threading.active_count()} threads"
    torch = sys.modules["torch"]
    if torch.cuda.is_initialized():
        return "has initialised CUDA"
    return ""


def _reap(children: dict, poller, pidfd: int) -> None:
    """A worker ended: tell the server its exit code (as multiprocessing's: -N for signal N)."""
    pid, status = children.pop(pidfd)
    poller.unregister(pidfd)
    _, wait_status = os.waitpid(pid, 0)
    os.close(pidfd)
    try:
        status.send(os.waitstatus_to_exitcode(wait_status).to_bytes(_INT, "big", signed=True))
    except OSError:
        pass
    status.close()


def _become_worker(control, children, status, wire_fd, module, name, args) -> None:
    """In the forked child: let go of the forkserver's descriptors, take fresh random streams,
    run the target. Never returns."""
    code = 1
    try:
        control.close()
        status.close()
        for pidfd, (_, other) in children.items():
            os.close(pidfd)
            other.close()
        import numpy as np
        import torch

        torch.seed()         # else every worker would draw what the forkserver's generator would
        np.random.seed()
        target: Any = importlib.import_module(module)
        for part in name.split("."):
            target = getattr(target, part)
        target(socket.socket(fileno=wire_fd), *args)
        code = 0
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else (0 if end.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
