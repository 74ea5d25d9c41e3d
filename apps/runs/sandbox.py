"""Running a PythonScript node's script: in a child process of the run worker, shut in.

``run_script`` starts ``script_child.py`` with ``python -I`` (no user site, no environment
variables read, no current folder on the path) in a fresh scratch folder that is deleted
afterwards, with a minimal environment (no secrets, no database, no Django settings), no
inherited descriptors beyond its three pipes, and a wall-clock limit enforced here on top of
the CPU-time and memory limits the child sets itself (see its docstring for the rest). What
crosses is JSON and an npz read with ``allow_pickle=False``. No Django here.
"""
from __future__ import annotations

import io
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

CHILD = Path(__file__).with_name("script_child.py")
NOBODY = 65534
ANSWER_LIMIT = 512 * 1024 * 1024    # bytes the child may answer with; the element limit is checked after


@dataclass(frozen=True)
class ScriptLimits:
    wall_s: float = 30
    cpu_s: int = 20
    memory_mb: int = 1024
    max_elements: int = 100_000_000


@dataclass
class ScriptResult:
    outputs: dict[str, Any] = field(default_factory=dict)
    printed: str = ""
    error: str | None = None         # "line 3: ZeroDivisionError: division by zero", or why it was stopped
    line: int | None = None          # the script's line the error points at
    network: str = ""                # "namespace" (a network namespace of its own) or "interpreter" (sockets refused)


def run_script(code: str, inputs: dict[str, Any], params: dict[str, Any], limits: ScriptLimits) -> ScriptResult:
    with tempfile.TemporaryDirectory(prefix="codefyui-script-") as scratch:
        if os.geteuid() == 0:  # the child leaves root for nobody (script_child.leave_root)
            os.chown(scratch, NOBODY, NOBODY)
        env = {"PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8",
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        child = subprocess.Popen([sys.executable, "-I", str(CHILD)], cwd=scratch, env=env, close_fds=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
        try:
            answer, errors = child.communicate(_request(code, inputs, params, limits), timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            _kill(child)
            return ScriptResult(error=f"The script ran longer than {limits.wall_s:g} seconds and was stopped.")
        finally:
            _kill(child)
    if child.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return ScriptResult(error=f"The script used more than {limits.cpu_s} seconds of CPU time and was stopped.")
    try:
        return _result(answer, limits)
    except (ValueError, KeyError, struct.error, OSError):
        last = (errors.decode(errors="replace").strip().splitlines() or ["no answer"])[-1][:300]
        return ScriptResult(error=f"The script's process ended without an answer ({last}).")


def _kill(child: subprocess.Popen) -> None:
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
    result = ScriptResult(printed=str(header.get("printed", "")), network=str(header.get("network", "")))
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
