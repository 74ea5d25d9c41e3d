"""The child process a PythonScript node's script runs in (started by sandbox.py inside
bubblewrap, never imported).

The sandbox is the wall: this process sees only the Python installation, read-only, and a
private /tmp it starts in (sandbox.py). Here it adds a second: it imports torch and numpy,
reads one request from stdin, sets resource limits (CPU time, address space, file size,
open files, no new processes), adds an audit hook that refuses files outside /tmp and
Python's own libraries, sockets, new processes, ctypes and importing the server's code or
Django, runs the script and writes one answer to the pipe that was its stdout. Values cross
as JSON plus an ``.npz`` of arrays read with ``allow_pickle=False``: nothing is unpickled.

The protocol (both ways): an 8-byte length and a JSON header, then an 8-byte length and the
npz bytes. This module imports nothing of the project: it must run outside it.
"""
import contextlib
import io
import json
import os
import resource
import site
import struct
import sys
import sysconfig
import traceback

import numpy as np
import torch

SCRIPT = "<script>"
PRINT_LIMIT = 64_000
OPEN_FILES = 256
REFUSED_IMPORTS = {"django", "codefyui", "apps", "channels", "daphne", "twisted", "autobahn", "asgiref", "psycopg", "sqlite3",
                   "_sqlite3", "ctypes", "_ctypes", "subprocess", "_posixsubprocess", "multiprocessing",
                   "socket", "_socket", "ssl", "urllib", "http", "pty"}
REFUSED_EVENTS = ("socket.", "subprocess.", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork",
                  "os.forkpty", "ctypes.", "os.kill", "os.killpg", "signal.pthread_kill", "resource.setrlimit",
                  "sys.addaudithook", "os.chroot", "fcntl.ioctl", "shutil.rmtree", "os.startfile")
PATH_EVENTS = {"open": (0,), "os.listdir": (0,), "os.scandir": (0,), "os.remove": (0,), "os.rmdir": (0,),
               "os.mkdir": (0,), "os.chmod": (0,), "os.chown": (0,), "os.truncate": (0,), "os.utime": (0,),
               "os.rename": (0, 1), "os.link": (0, 1), "os.symlink": (0, 1), "os.chdir": (0,),
               "glob.glob": (0,), "os.walk": (0,)}
READ_EVENTS = {"open", "os.listdir", "os.scandir", "glob.glob"}


def read_frame(stream) -> bytes:
    size = struct.unpack(">Q", stream.read(8))[0]
    return stream.read(size)


def write_frame(stream, data: bytes) -> None:
    stream.write(struct.pack(">Q", len(data)) + data)


def vm_size() -> int:
    with open("/proc/self/status") as status:
        line = next(x for x in status if x.startswith("VmSize:"))
    return int(line.split()[1]) * 1024


def limit(cpu_s: int, memory_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    address = vm_size() + memory_mb * 1024 * 1024   # torch's own reservations are already made
    resource.setrlimit(resource.RLIMIT_AS, (address, address))
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024 * 1024,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES,) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))  # the sandbox's user is never root: the kernel enforces it


def guard(scratch: str) -> None:
    """The audit hook: once added, it cannot be removed for the life of the process."""
    libraries = tuple({os.path.realpath(p) + os.sep for p in
                       [sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"], *site.getsitepackages()]
                       if os.path.isdir(p)})
    scratch = os.path.realpath(scratch) + os.sep

    def inside(path, allowed) -> bool:
        if isinstance(path, int):
            return True   # an already open descriptor
        path = os.fsdecode(path)
        full = os.path.realpath(path) + (os.sep if os.path.isdir(path) else "")
        return full.startswith(allowed) or full == "/dev/null"

    def hook(event: str, args) -> None:
        if event == "import":
            top = str(args[0]).split(".")[0]
            if top in REFUSED_IMPORTS:
                raise ImportError(f"Scripts cannot import '{args[0]}' on this server")
        elif event.startswith(REFUSED_EVENTS):
            what = "open network connections" if event.startswith("socket.") else f"use {event.split('.')[0]}"
            if event.startswith(("subprocess.", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork")):
                what = "start other programs or processes"
            raise PermissionError(f"Scripts cannot {what} on this server ({event})")
        elif event in PATH_EVENTS:
            reading = event in READ_EVENTS and not (event == "open" and _writes(args))
            allowed = (scratch, *libraries) if reading else (scratch,)  # Python may read its own libraries
            for i in PATH_EVENTS[event]:
                if i < len(args) and args[i] is not None:
                    if not inside(args[i], allowed):
                        raise PermissionError(f"Scripts can only use files in their own scratch folder, "
                                              f"not {args[i]!r}")

    sys.addaudithook(hook)


def _writes(args) -> bool:
    mode, flags = (args[1] if len(args) > 1 else "r") or "r", (args[2] if len(args) > 2 else 0) or 0
    return any(c in str(mode) for c in "wax+") or bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))


def decode_inputs(header: dict, arrays) -> dict:
    inputs = {}
    for port, spec in header["inputs"].items():
        if spec["kind"] == "tensor":
            inputs[port] = torch.from_numpy(arrays[spec["key"]].copy())
        else:
            inputs[port] = spec["value"]
    return inputs


def encode_outputs(result) -> tuple[dict, dict]:
    if not isinstance(result, dict):
        result = {"out1": result}
    specs, arrays = {}, {}
    for port, value in result.items():
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu()
            value = value.float() if value.dtype == torch.bfloat16 else value
            arrays[port] = value.numpy()
            specs[str(port)] = {"kind": "tensor", "key": str(port)}
        elif isinstance(value, np.ndarray) and value.dtype != object:
            arrays[port] = value
            specs[str(port)] = {"kind": "tensor", "key": str(port)}
        else:
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError):
                raise TypeError(f"the value for '{port}' is a {type(value).__name__}; a script can return tensors, "
                                "numpy arrays, numbers, text, lists and dicts of them, or None") from None
            specs[str(port)] = {"kind": "json", "value": value}
    return specs, arrays


def script_error(exc: BaseException) -> dict:
    """The script's own line, never a frame of this file."""
    if isinstance(exc, SyntaxError) and exc.filename == SCRIPT:
        return {"line": exc.lineno, "text": f"SyntaxError: {exc.msg}"}
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == SCRIPT]
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MemoryError) or "can't allocate memory" in str(exc):
        text = "MemoryError: the script needed more memory than a script may use"
    return {"line": lines[-1] if lines else None, "text": text}


def main() -> None:
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                                   # a stray write to fd 1 cannot corrupt the answer
    header = json.loads(read_frame(sys.stdin.buffer))
    arrays = np.load(io.BytesIO(read_frame(sys.stdin.buffer)), allow_pickle=False)
    inputs = decode_inputs(header, arrays)
    sys.stdin.close()
    os.close(0)
    torch.set_num_threads(1)
    limit(header["cpu_s"], header["memory_mb"])
    guard(os.getcwd())
    printed = io.StringIO()
    reply = {"printed": "", "error": None, "outputs": {}}
    blobs = {}
    try:
        namespace = {"__name__": "__script__", "__builtins__": __builtins__, "torch": torch, "np": np,
                     "device": torch.device("cpu")}
        with contextlib.redirect_stdout(printed):
            exec(compile(header["code"], SCRIPT, "exec"), namespace)
            run = namespace.get("run")
            if not callable(run):
                raise NameError("the script must define run(inputs, params)")
            result = run(inputs, dict(header["params"]))
        reply["outputs"], blobs = encode_outputs(result)
    except BaseException as exc:  # the script's SystemExit and KeyboardInterrupt too
        reply["error"] = script_error(exc)
    reply["printed"] = printed.getvalue()[:PRINT_LIMIT]
    buffer = io.BytesIO()
    np.savez(buffer, **blobs)
    write_frame(answer, json.dumps(reply).encode())
    write_frame(answer, buffer.getvalue())
    answer.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
