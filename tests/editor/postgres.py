"""A throwaway PostgreSQL cluster on loopback for the tests that need two server processes on
one database: initdb in a temp dir with the machine's binaries, a free port, torn down after."""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from typing import Iterator

USER, DATABASE = "codefyui", "codefyui"


def binaries() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("No PostgreSQL binaries under /usr/lib/postgresql/*/bin (install postgresql).")
    return os.path.dirname(found[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_owner(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run it as the postgres user then."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextmanager
def cluster() -> Iterator[str]:
    """A running cluster with an empty database; yields its DATABASE_URL."""
    bin_dir, port = binaries(), free_port()
    root = tempfile.mkdtemp(prefix="codefyui-pg-")
    data = os.path.join(root, "data")
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    run = lambda *args: subprocess.run(_as_owner(list(args)), check=True, capture_output=True, timeout=120)  # noqa: E731
    try:
        run(f"{bin_dir}/initdb", "-D", data, "-U", USER, "--auth=trust", "--no-sync", "-E", "UTF8")
        run(f"{bin_dir}/pg_ctl", "-D", data, "-l", os.path.join(root, "log"), "-w", "-t", "60", "start",
            "-o", f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off")
        try:
            run(f"{bin_dir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", USER, DATABASE)
            yield f"postgres://{USER}@127.0.0.1:{port}/{DATABASE}"
        finally:
            run(f"{bin_dir}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)
