"""The server's own files are private: the database (and its -wal and -shm), var/, the
students' files and the secret key are the server's user's alone, whatever the umask, and
an existing var/ with looser modes is mended at start-up."""
from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from codefyui import conf
from codefyui.settings import private_dir, private_file

ROOT = Path(__file__).resolve().parent.parent


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def loose_umask():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_new_database_and_its_wal_and_shm_are_private(tmp_path, loose_umask):
    database = private_file(tmp_path / "codefyui.sqlite3")
    with sqlite3.connect(database) as connection:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("CREATE TABLE t (x)")
        connection.execute("INSERT INTO t VALUES (1)")
        wal, shm = Path(f"{database}-wal"), Path(f"{database}-shm")
        assert wal.exists() and shm.exists()
        assert {mode(database), mode(wal), mode(shm)} == {0o600}


def test_an_existing_database_with_loose_modes_is_mended(tmp_path, loose_umask):
    database = tmp_path / "codefyui.sqlite3"
    for path in (database, Path(f"{database}-wal")):
        path.write_bytes(b"")
        path.chmod(0o644)
    private_file(database)
    assert mode(database) == mode(Path(f"{database}-wal")) == 0o600


def test_a_folder_is_private_whatever_the_umask_and_an_old_one_is_mended(tmp_path, loose_umask):
    assert mode(private_dir(tmp_path / "var" / "userfiles")) == 0o700
    old = tmp_path / "old"
    old.mkdir(mode=0o755)
    assert mode(private_dir(old)) == 0o700


def test_the_server_starts_with_var_the_database_the_key_and_my_files_private(tmp_path):
    """A server started with a loose umask on a var/ someone made world-readable."""
    var = tmp_path / "var"
    var.mkdir(mode=0o755)
    (var / "secret_key").write_text("old-key")
    (var / "secret_key").chmod(0o644)
    env = {**os.environ, "CODEFYUI_VAR_DIR": str(var), "DJANGO_SETTINGS_MODULE": "codefyui.settings"}
    env.pop("DATABASE_URL", None)
    env.pop("DJANGO_SECRET_KEY", None)
    subprocess.run(["sh", "-c", f"umask 022 && {sys.executable} manage.py migrate --noinput -v0"],
                   cwd=ROOT, env=env, check=True, timeout=120)
    assert mode(var) == mode(var / "userfiles") == 0o700
    assert mode(var / "codefyui.sqlite3") == mode(var / "secret_key") == 0o600
    assert (var / "secret_key").read_text() == "old-key"


def test_a_new_secret_key_is_never_readable_by_others(tmp_path, monkeypatch, loose_umask):
    from codefyui import settings
    monkeypatch.setattr(settings, "VAR_DIR", tmp_path)
    monkeypatch.delenv("DJANGO_SECRET_KEY", raising=False)
    key = settings._secret_key()
    assert len(key) > 40 and mode(tmp_path / "secret_key") == 0o600


def test_this_servers_var_is_private():
    assert mode(conf.VAR_DIR) == 0o700
