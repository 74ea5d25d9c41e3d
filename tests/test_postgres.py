"""The throwaway PostgreSQL cluster (tests/conftest.py: postgres_url) serves the project:
the migrations apply to it from a separate server process, and what one process writes
another reads. (The first step of the two-process edit tests of issue 12, item 4.)"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent


def manage(database_url: str, *args: str) -> str:
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_two_server_processes_share_the_postgresql_database(postgres_url):
    manage(postgres_url, "migrate", "--verbosity", "0")
    manage(postgres_url, "shell", "--no-imports", "-c", "from django.contrib.auth import get_user_model; "
                                        "get_user_model().objects.create_user('pg-student')")
    seen = manage(postgres_url, "shell", "--no-imports", "-c", "from django.db import connection; "
                                               "from django.contrib.auth import get_user_model; "
                                               "print(connection.vendor, get_user_model().objects.count())")
    assert seen.splitlines()[-1].split() == ["postgresql", "1"]
    with psycopg.connect(postgres_url.replace("postgres://", "postgresql://")) as conn:
        assert conn.execute("select username from auth_user").fetchall() == [("pg-student",)]
