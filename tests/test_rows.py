"""codefyui/rows.py writes a row as the ORM would: read back through the ORM, on SQLite and on
PostgreSQL, it is the same row. The API token's user is read as the ORM reads it too
(apps/accounts/backends.py makes it from its own statement)."""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from apps.runs.models import Run
from codefyui import rows

ROOT = Path(__file__).resolve().parent.parent
NODES = {"a": {"status": "succeeded", "summary": {"tensor": {"shape": [1, 4], "min": -0.5, "max": 2.25}}}}
LOG = [{"level": "info", "node": "a", "message": "Print: tensor([1., 2.]) — naïve ✓"}]
WHEN = datetime(2026, 12, 5, 10, 30, 15, 123456, tzinfo=timezone.utc)


def fields(run: Run) -> dict:
    return {f.attname: getattr(run, f.attname) for f in Run._meta.concrete_fields if f.attname not in ("id", "created")}


def token_user_reads_as_the_orms(user) -> bool:
    """The user as the token backend reads it for a new token: every field's value and type as
    the ORM's, and a saved instance of this database."""
    from apps.accounts import backends
    from apps.accounts.models import ApiToken

    user.last_login = WHEN
    user.save()
    found = backends._token_user(ApiToken.hash(ApiToken.issue(user)))

    def row(u) -> list:
        return [(getattr(u, f.attname), type(getattr(u, f.attname))) for f in user._meta.concrete_fields]

    return row(found) == row(type(user).objects.get(pk=user.pk)) and not found._state.adding


@pytest.mark.django_db
def test_a_tokens_user_reads_as_the_orms(student):
    assert token_user_reads_as_the_orms(student)


@pytest.mark.django_db
def test_an_inserted_row_reads_back_as_the_orms(student):
    made = rows.insert(Run(owner=student, options={"seed": 42, "record": True}, graph_name="CNN ✓"))
    by_orm = Run.objects.create(owner=student, options={"seed": 42, "record": True}, graph_name="CNN ✓")
    mine, theirs = Run.objects.get(pk=made.pk), Run.objects.get(pk=by_orm.pk)
    assert fields(mine) == fields(theirs)
    assert mine.created == made.created and made.created is not None   # auto_now_add, as create() sets it
    assert not made._state.adding and made._state.db == "default"     # a saved instance, as create() returns


@pytest.mark.django_db
def test_an_updated_row_reads_back_as_the_orms(student):
    mine, theirs = (Run.objects.create(owner=student) for _ in range(2))
    values = dict(nodes=NODES, log=LOG, status=Run.Status.SUCCEEDED, error="", finished=WHEN, device="cpu")
    assert rows.update(Run, str(mine.pk), **values) == 1    # the id as the recorder has it: text
    Run.objects.filter(pk=theirs.pk).update(**values)
    assert fields(Run.objects.get(pk=mine.pk)) == fields(Run.objects.get(pk=theirs.pk))
    assert Run.objects.get(pk=mine.pk).finished == WHEN
    assert rows.update(Run, "00000000-0000-0000-0000-000000000000", status=Run.Status.FAILED) == 0


def test_the_rows_read_back_the_same_on_postgresql(postgres_url):
    script = (
        "from django.core.management import call_command\n"
        "call_command('migrate', interactive=False, verbosity=0)\n"
        "from tests import test_rows as t\n"
        "from django.contrib.auth import get_user_model\n"
        "from apps.runs.models import Run\n"
        "from codefyui import rows\n"
        "user, _ = get_user_model().objects.get_or_create(username='rows-check')\n"
        "mine = rows.insert(Run(owner=user, options={'seed': 1}, graph_name='pg'))\n"
        "theirs = Run.objects.create(owner=user, options={'seed': 1}, graph_name='pg')\n"
        "values = dict(nodes=t.NODES, log=t.LOG, status='succeeded', finished=t.WHEN)\n"
        "assert rows.update(Run, str(mine.pk), **values) == 1\n"
        "Run.objects.filter(pk=theirs.pk).update(**values)\n"
        "a, b = Run.objects.get(pk=mine.pk), Run.objects.get(pk=theirs.pk)\n"
        "assert t.fields(a) == t.fields(b), (t.fields(a), t.fields(b))\n"
        "assert a.created == mine.created\n"
        "assert t.token_user_reads_as_the_orms(user)\n"
        "print('same')\n")
    env = {**os.environ, "DATABASE_URL": postgres_url, "DJANGO_SETTINGS_MODULE": "codefyui.settings",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and done.stdout.strip().endswith("same"), done.stderr[-3000:]
