"""Two server processes editing one tab on PostgreSQL lose no acknowledged edit: each edit
reads, changes and saves its tab under a row lock (select_for_update)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("edit_worker.py")
EDITS_EACH = 25


def django_process(url: str, *args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "codefyui.settings",
           "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def finish(process: subprocess.Popen) -> str:
    out, err = process.communicate(timeout=100)
    assert process.returncode == 0, err[-3000:]
    return out


def test_two_server_processes_editing_one_tab_lose_no_acknowledged_edit(postgres_url):
    finish(django_process(postgres_url, "manage.py", "migrate", "--no-input"))
    tab_id = int(finish(django_process(postgres_url, str(WORKER), "setup")).strip())
    start = time.time() + 4  # both processes are up and imported by then
    workers = [django_process(postgres_url, str(WORKER), "edit", str(tab_id), str(start), str(EDITS_EACH))
               for _ in range(2)]
    acknowledged = [json.loads(finish(w)) for w in workers]
    with psycopg.connect(postgres_url) as conn:
        doc, revision = conn.execute("SELECT document, revision FROM graphs_tab WHERE id = %s", [tab_id]).fetchone()
    ids = [n["id"] for n in doc["nodes"]]
    assert sum(len(a) for a in acknowledged) == 2 * EDITS_EACH  # every edit merged: each adds a new node
    assert sorted(ids) == sorted(acknowledged[0] + acknowledged[1]) and len(set(ids)) == 2 * EDITS_EACH
    assert revision == 2 * EDITS_EACH
