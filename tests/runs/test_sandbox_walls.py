"""The walls around a PythonScript are made by the operating system (bubblewrap), not only by
the child's audit hook: torch and numpy open files in C, where no Python hook sees them.

Two kinds of test. ``script`` runs a student's script the way a run does (sandbox, limits and
audit hook): each escape a student tried is refused or lands nowhere. ``bare`` runs plain
Python in the same sandbox with no audit hook and no limits, to show that the sandbox alone
holds the wall."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import torch
from django.db import connection

from apps.runs import sandbox
from apps.runs.sandbox import ScriptLimits, run_script

LIMITS = ScriptLimits(wall_s=60, cpu_s=30, memory_mb=256)
PROJECT = Path(__file__).resolve().parents[2]


def script(body: str, inputs=None, limits=LIMITS):
    code = "def run(inputs, params):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    return run_script(code, inputs or {}, {}, limits)


def bare(code: str) -> subprocess.CompletedProcess:
    """Plain Python in the sandbox, without the child's audit hook or limits."""
    child = sandbox._start([sys.executable, "-I", "-c", code], 1, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = child.communicate(timeout=60)
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def unreadable(path) -> str:
    return script(f"return torch.from_file({str(path)!r}, size=1, dtype=torch.uint8)").error or ""


@pytest.mark.django_db
def test_torch_from_file_cannot_read_the_servers_database():
    database = Path(connection.settings_dict["NAME"])
    assert database.is_file()
    assert "No such file or directory" in unreadable(database)


def test_torch_from_file_cannot_read_the_machines_etc():
    assert "No such file or directory" in unreadable("/etc/passwd")


def test_torch_from_file_cannot_read_another_students_files(user_files_dir):
    theirs = user_files_dir / "7" / "homework.pt"
    theirs.parent.mkdir(parents=True)
    torch.save(torch.ones(3), theirs)
    assert "No such file or directory" in unreadable(theirs)


def test_the_project_and_its_secret_key_are_not_there():
    result = bare(f"import os; print(os.path.exists({str(PROJECT / 'manage.py')!r}), "
                  f"os.path.exists({str(PROJECT / 'var')!r}), sorted(os.listdir('/')))")
    assert result.returncode == 0, result.stderr
    missing_project, missing_var, top = result.stdout.split(" ", 2)
    assert (missing_project, missing_var) == ("False", "False")
    assert "etc" in top and "home" not in top and "root" not in top and "var" not in top


def test_the_sandbox_sees_no_file_of_etc_but_the_linkers_cache():
    assert bare("import os; print(os.listdir('/etc'))").stdout.strip() == "['ld.so.cache']"


def test_nothing_outside_tmp_is_writable_even_without_the_audit_hook():
    result = bare(f"import numpy as np; np.save({str(sys.prefix + '/leak.npy')!r}, np.ones(2))")
    assert "Read-only file system" in result.stderr
    assert not Path(sys.prefix, "leak.npy").exists()


def test_what_a_script_writes_in_tmp_and_dev_shm_is_gone_after_it():
    name = f"codefyui-leak-{uuid.uuid4().hex}"
    wrote = script(f"t = torch.from_file('/dev/shm/{name}', shared=True, size=1000, dtype=torch.uint8)\n"
                   f"torch.save(torch.ones(4), '/tmp/{name}.pt')\n"
                   f"return os.path.getsize('/tmp/{name}.pt') > 0".replace("os.path", "__import__('os').path"))
    assert wrote.error is None and wrote.outputs == {"out1": True}
    assert not Path("/dev/shm", name).exists() and not Path("/tmp", f"{name}.pt").exists()
    assert "No such file or directory" in unreadable(f"/tmp/{name}.pt")  # nor does the next script see it


def test_scratch_space_is_bounded():
    result = bare("open('/tmp/big', 'wb').write(bytes(2 * 1024 * 1024))")   # bare's scratch is 1 MB
    assert "No space left on device" in result.stderr


def test_np_memmap_of_a_file_outside_is_refused():
    assert "No such file or directory" in bare("import numpy as np; np.memmap('/etc/passwd')").stderr
    assert "PermissionError" in script("return np.memmap('/etc/hostname')").error


def test_proc_shows_only_the_sandboxs_own_processes():
    pids = bare("import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))").stdout
    assert os.getpid() not in eval(pids) and max(eval(pids)) < 10


def test_the_parents_proc_entry_cannot_be_read():
    result = bare(f"open('/proc/{os.getppid()}/environ').read()")
    assert "No such file or directory" in result.stderr


def test_the_environment_holds_no_secrets(monkeypatch):
    monkeypatch.setenv("DJANGO_SECRET_KEY", "do-not-leak")
    env = script("import os\nreturn {'out1': dict(os.environ)}").outputs["out1"]
    assert set(env) <= {*sandbox.ENV, "PWD"}   # bubblewrap sets PWD to /tmp
    assert "do-not-leak" not in bare("print(open('/proc/1/environ').read())").stdout


def test_the_network_has_only_a_loopback_that_is_down():
    result = bare("import socket; s = socket.socket(); s.connect(('127.0.0.1', 5432))")
    assert "Network is unreachable" in result.stderr or "Connection refused" in result.stderr
    assert bare("print(open('/proc/net/dev').read().count(':'))").stdout.strip() == "1"   # lo alone
    assert "Scripts cannot open network connections" in script("import socket\nsocket.socket()").error


def test_the_script_is_not_root_and_cannot_start_processes():
    status = bare("print(open('/proc/self/status').read())").stdout
    uid = next(line.split()[1] for line in status.splitlines() if line.startswith("Uid:"))
    assert uid != "0"
    assert "Scripts cannot start other programs or processes" in script("import os\nreturn os.fork()").error


def test_a_script_cannot_make_a_user_namespace_of_its_own():
    result = bare("import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
                  "print(libc.unshare(0x10000000), ctypes.get_errno())")
    assert result.stdout.split()[0] == "-1"


def test_where_the_sandbox_cannot_be_built_scripts_do_not_run(no_bubblewrap):
    result = script("return 1")
    assert result.outputs == {}
    assert result.error.startswith("Script nodes cannot run on this server: it cannot build the sandbox")
    assert "bubblewrap (the bwrap command) is not installed" in result.error
    assert "apt-get install bubblewrap" in result.error


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root server has the second way")
def test_a_root_server_whose_checkout_nobody_can_read_maps_the_script_to_nobody_with_the_same_walls():
    """Where nobody cannot read the venv (a checkout under /root), root starts bubblewrap and maps
    the script to uid 65534: it still sees nothing of the project and writes nowhere but /tmp."""
    child = sandbox._start([sys.executable, "-I", "-c", f"import os; print(os.getuid(), "
                            f"os.path.exists({str(PROJECT / 'manage.py')!r})); open('/usr/x', 'w')"],
                           1, sandbox.MAPPED, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = child.communicate(timeout=60)
    assert out.split() == ["65534", "False"] and "Read-only file system" in err
