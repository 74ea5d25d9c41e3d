"""Shared fixtures: one torch thread, a fresh capture store and cache per test, users, and
a throwaway PostgreSQL cluster for the tests that need a real server database."""
from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest
import torch

from apps.runs.store import MemoryCaptureStore, set_store

torch.set_num_threads(1)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def example(name: str) -> dict:
    return json.loads((EXAMPLES / f"{name}.json").read_text())


@pytest.fixture
def walkthrough() -> dict:
    """The seed's walkthrough graph: TensorInput 1,4,4 explicit -> Reshape 1,16 -> Softmax -> Print."""
    return example("walkthrough")


@pytest.fixture(autouse=True)
def fresh_store():
    store = MemoryCaptureStore()
    set_store(store)
    yield store
    set_store(None)


@pytest.fixture(autouse=True)
def fresh_cache():
    """The server-wide execution cache starts empty for every test."""
    from apps.runs import service
    service.clear_cache()
    yield


@pytest.fixture
def no_bubblewrap(monkeypatch):
    """A machine without bubblewrap: script nodes cannot build their sandbox."""
    from apps.runs import sandbox
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    sandbox.probe.cache_clear()
    yield
    sandbox.probe.cache_clear()


@pytest.fixture(autouse=True)
def user_files_dir(tmp_path, monkeypatch):
    """Every test's students keep their own files (My files) in a folder of the test's."""
    from codefyui import conf
    monkeypatch.setattr(conf, "USER_FILES_DIR", tmp_path / "userfiles")
    return conf.USER_FILES_DIR


@pytest.fixture(scope="session", autouse=True)
def quick_password_hashing():
    """The tests make an account or two each: the product's PBKDF2 costs 0.4 s a hash (slow on
    purpose), MD5 almost nothing. A login, a lockout or a changed password proves the same
    with either hasher."""
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture
def student(django_user_model):
    return django_user_model.objects.create_user("ada", password="pw-ada-123")


@pytest.fixture
def stranger(django_user_model):
    return django_user_model.objects.create_user("eve", password="pw-eve-123")


@pytest.fixture
def student_client(client, student):
    client.force_login(student)
    return client


@pytest.fixture(scope="session")
def postgres_url():
    """A throwaway PostgreSQL cluster on a free loopback port, started with the machine's
    binaries (Debian's /usr/lib/postgresql/*/bin, else the PATH; CI has them) and removed at the end: a database
    several server processes can share, as a school's would. As root (containers, CI) the
    cluster runs as the postgres user, since PostgreSQL refuses to run as root."""
    installed = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")) or [shutil.which("pg_ctl") or ""]
    if not installed[-1]:
        pytest.fail("PostgreSQL's initdb and pg_ctl are not installed (apt-get install postgresql)")
    bindir = Path(os.path.realpath(installed[-1])).parent
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    home = Path(tempfile.mkdtemp(prefix="codefyui-pg-"))
    data = home / "data"
    if as_postgres:
        shutil.chown(home, "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def pg(*args: str) -> None:
        subprocess.run([*as_postgres, *args], check=True, capture_output=True, timeout=120)

    pg(str(bindir / "initdb"), "-D", str(data), "-U", "codefyui", "--auth=trust", "-E", "UTF8", "--no-instructions")
    pg(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(home / "log"), "-w", "-o",
       f"-h 127.0.0.1 -p {port} -k {home} -F -c fsync=off -c full_page_writes=off", "start")
    try:
        yield f"postgres://codefyui@127.0.0.1:{port}/postgres"
    finally:
        pg(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(home, ignore_errors=True)
