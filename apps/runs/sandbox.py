"""Running a PythonScript node's script: in a child process of the run worker, inside an
operating-system sandbox (docs/decisions/script-sandbox.md).

``run_script`` starts ``script_child.py`` under bubblewrap (Debian's ``bwrap``): new user,
mount, PID, network, IPC, UTS and cgroup namespaces; a filesystem that holds only the
Python installation, the virtual environment's packages and the shared libraries, all
read-only; a private tmpfs of ``scratch_mb`` at ``/tmp`` (the script's folder and home) and
another at ``/dev/shm``; a ``/proc`` that shows only the sandbox's own processes; no
network but a loopback that is down. A server run as root starts bubblewrap as ``nobody``.
When the sandbox goes, so does everything the script wrote. The child then sets its own
resource limits and an audit hook (a second wall, see its docstring).

Where the machine cannot build the sandbox (no bubblewrap, user namespaces refused),
scripts do not run: ``sandbox_problem`` says why, in words an administrator can act on.
What crosses is JSON and an npz read with ``allow_pickle=False``. No Django here.
"""
from __future__ import annotations

import functools
import io
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

CHILD = Path(__file__).with_name("script_child.py")
INSIDE_CHILD = "/sandbox/script_child.py"
SCRATCH = "/tmp"
NOBODY = 65534
ANSWER_LIMIT = 512 * 1024 * 1024    # bytes the child may answer with; the element limit is checked after
ENV = {"PATH": "/usr/bin:/bin", "HOME": SCRATCH, "TMPDIR": SCRATCH, "LANG": "C.UTF-8",
       "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@dataclass(frozen=True)
class ScriptLimits:
    wall_s: float = 30
    cpu_s: int = 20
    memory_mb: int = 1024
    max_elements: int = 100_000_000
    scratch_mb: int = 64


@dataclass
class ScriptResult:
    outputs: dict[str, Any] = field(default_factory=dict)
    printed: str = ""
    error: str | None = None         # "line 3: ZeroDivisionError: division by zero", or why it was stopped
    line: int | None = None          # the script's line the error points at


# -- the sandbox ---------------------------------------------------------------------------

def _readable_roots() -> list[str]:
    """What the child may see: the interpreter's installation, the virtual environment (its
    packages) and the system's shared libraries. Nothing of the project, var/ or /etc."""
    roots = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable)), "/usr/lib"}
    if os.path.isdir("/usr/lib64"):
        roots.add("/usr/lib64")
    kept = sorted(os.path.realpath(r) for r in roots)
    return [r for i, r in enumerate(kept) if not any(r.startswith(k.rstrip("/") + "/") for k in kept[:i])]


def bwrap_argv(scratch_mb: int) -> list[str]:
    """bubblewrap's command line for one script, without the command it runs."""
    size = str(scratch_mb * 1024 * 1024)
    argv = [shutil.which("bwrap") or "bwrap",
            "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
            "--die-with-parent", "--new-session", "--hostname", "sandbox",
            # the scratch first: a root under /tmp (a checkout there) is then bound over it, not hidden
            "--size", size, "--tmpfs", SCRATCH]
    for root in _readable_roots():
        argv += ["--ro-bind", root, root]
    for link in ("lib", "lib64", "bin"):  # a merged /usr's links, where the host has them
        if os.path.islink(f"/{link}"):
            argv += ["--symlink", os.readlink(f"/{link}"), f"/{link}"]
    argv += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
             "--ro-bind", str(CHILD), INSIDE_CHILD,
             "--proc", "/proc", "--dev", "/dev",
             "--size", size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--chdir", SCRATCH]
    return argv


# How bubblewrap is started: a root server starts it as nobody, so the kernel sees the script as
# nobody too (file permissions, the process limit). Where nobody cannot read the Python it needs
# (a checkout under /root), root starts it and maps the script to uid 65534 inside its own user
# namespace: it still sees only what is bound in, holds no capability outside, and the audit
# hook refuses new processes. Any other server starts it as itself.
AS_NOBODY = ({"user": NOBODY, "group": NOBODY, "extra_groups": []}, [])
MAPPED = ({}, ["--uid", str(NOBODY), "--gid", str(NOBODY)])


def _ways() -> list[tuple[dict, list[str]]]:
    return [AS_NOBODY, MAPPED] if os.geteuid() == 0 else [({}, [])]


def _start(command: list[str], scratch_mb: int, way: tuple[dict, list[str]] | None = None,
           **popen: Any) -> subprocess.Popen:
    user, extra = way or _way()
    argv = bwrap_argv(scratch_mb)
    return subprocess.Popen(argv[:1] + extra + argv[1:] + command, cwd="/", env=ENV, close_fds=True,
                            start_new_session=True, **user, **popen)


@functools.cache
def probe() -> tuple[tuple[dict, list[str]] | None, str]:
    """The first way of starting bubblewrap that builds the sandbox here, or None and why not."""
    if shutil.which("bwrap") is None:
        return None, "bubblewrap (the bwrap command) is not installed"
    reason = "no reason given"
    for way in _ways():
        try:
            probe = _start([sys.executable, "-I", "-S", "-c", "pass"], 1, way,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            _, errors = probe.communicate(timeout=30)
        except (OSError, subprocess.SubprocessError) as exc:
            reason = f"bubblewrap could not be started: {exc}"
            continue
        if probe.returncode == 0:
            return way, ""
        reason = (errors.decode(errors="replace").strip().splitlines() or [reason])[-1][:300]
    return None, reason


def _way() -> tuple[dict, list[str]]:
    return probe()[0] or _ways()[0]


def sandbox_problem() -> str | None:
    """None when this machine can build the sandbox, else why not, for the administrator.
    Asked once per process (``probe``): a fixed machine is seen after the server restarts."""
    way, reason = probe()
    if way is not None:
        return None
    return (f"Script nodes cannot run on this server: it cannot build the sandbox that shuts each script in "
            f"({reason}). An administrator installs Debian's bubblewrap package (apt-get install bubblewrap), "
            "allows user namespaces (sysctl user.max_user_namespaces above 0), then restarts the server.")


# -- one script ----------------------------------------------------------------------------

def run_script(code: str, inputs: dict[str, Any], params: dict[str, Any], limits: ScriptLimits) -> ScriptResult:
    if problem := sandbox_problem():
        return ScriptResult(error=problem)
    child = _start([sys.executable, "-I", INSIDE_CHILD], limits.scratch_mb,
                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        answer, errors = child.communicate(_request(code, inputs, params, limits), timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        return ScriptResult(error=f"The script ran longer than {limits.wall_s:g} seconds and was stopped.")
    finally:
        _kill(child)
    # bubblewrap ends as its child did: 128 + the signal that ended it
    if child.returncode in {128 + signal.SIGXCPU, 128 + signal.SIGKILL, -signal.SIGXCPU, -signal.SIGKILL}:
        return ScriptResult(error=f"The script used more than {limits.cpu_s} seconds of CPU time and was stopped.")
    try:
        return _result(answer, limits)
    except (ValueError, KeyError, struct.error, OSError):
        last = (errors.decode(errors="replace").strip().splitlines() or ["no answer"])[-1][:300]
        return ScriptResult(error=f"The script's process ended without an answer ({last}).")


def _kill(child: subprocess.Popen) -> None:
    """Ends bubblewrap's process group; the sandbox's processes die with it (--die-with-parent)."""
    if child.poll() is None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()


def _frame(data: bytes) -> bytes:
    return struct.pack(">Q", len(data)) + data


def _request(code: str, inputs: dict[str, Any], params: dict[str, Any], limits: ScriptLimits) -> bytes:
    specs, arrays = {}, {}
    for port, value in inputs.items():
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu()
            arrays[port] = (value.float() if value.dtype == torch.bfloat16 else value).numpy()
            specs[port] = {"kind": "tensor", "key": port}
        else:
            specs[port] = {"kind": "json", "value": _plain(value)}
    header = {"code": code, "params": _plain(params), "inputs": specs,
              "cpu_s": limits.cpu_s, "memory_mb": limits.memory_mb}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return _frame(json.dumps(header).encode()) + _frame(buffer.getvalue())


def _plain(value: Any) -> Any:
    """A value that is not a tensor, as JSON can carry it (anything else as its text)."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        return repr(value)


def _result(answer: bytes, limits: ScriptLimits) -> ScriptResult:
    stream = io.BytesIO(answer[:ANSWER_LIMIT])
    header = json.loads(_read_frame(stream))
    arrays = np.load(io.BytesIO(_read_frame(stream)), allow_pickle=False)
    result = ScriptResult(printed=str(header.get("printed", "")))
    if error := header.get("error"):
        result.line = error.get("line") if isinstance(error.get("line"), int) else None
        text = str(error.get("text", "error"))
        result.error = f"line {result.line}: {text}" if result.line else text
        return result
    for port, spec in header["outputs"].items():
        if spec["kind"] == "tensor":
            array = arrays[spec["key"]]
            if array.size > limits.max_elements:
                result.error = (f"'{port}' holds {array.size:,} elements, more than the {limits.max_elements:,} "
                                "this server allows (CODEFYUI_MAX_TENSOR_ELEMENTS).")
                return result
            result.outputs[port] = torch.from_numpy(array.copy())
        else:
            result.outputs[port] = spec["value"]
    return result


def _read_frame(stream: io.BytesIO) -> bytes:
    size = struct.unpack(">Q", stream.read(8))[0]
    data = stream.read(size)
    if len(data) != size:
        raise ValueError("a short answer")
    return data
