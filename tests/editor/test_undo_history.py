"""Undo / Redo history: one compressed row per step, bounded in steps and in bytes
(CODEFYUI_UNDO_MAX_MB per tab, oldest dropped first); an edit never reads the history's
snapshots, and the tab bar never reads documents."""
from __future__ import annotations

import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.editor.models import HistoryStep, Tab
from apps.graphs import document
from codefyui import conf

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tab(student, walkthrough):
    return Tab.objects.create(owner=student, title="walk", document=document.normalise(walkthrough))


def noisy(doc, i, size):
    """The document with a note holding ``size`` characters that do not compress."""
    text = "".join(random.Random(i).choices("abcdefghijklmnopqrstuvwxyz0123456789", k=size))
    note = {"id": "note", "type": "note", "position": {"x": 0.0, "y": 0.0}, "data": {"text": text}}
    return {**doc, "nodes": [n for n in doc["nodes"] if n["id"] != "note"] + [note]}


def test_the_history_is_bounded_in_bytes_dropping_the_oldest_steps(tab, monkeypatch):
    monkeypatch.setattr(conf, "UNDO_MAX_MB", 1)
    for i in range(12):
        tab.apply(noisy(tab.document, i, 300_000))
    steps = list(tab.history.order_by("pk"))
    assert sum(s.size for s in steps) <= 2**20 and 1 <= len(steps) < 12
    newest = steps[-1].state()[0]
    assert next(n for n in newest["nodes"] if n["id"] == "note")["data"]["text"] == \
        next(n for n in noisy(tab.document, 10, 300_000)["nodes"] if n["id"] == "note")["data"]["text"]
    while tab.undo():
        pass  # every kept step undoes, back to the oldest one kept
    assert tab.document["nodes"][-1]["id"] == "note"


def test_steps_are_compressed_and_undo_redo_round_trip(tab):
    before = tab.document
    tab.apply(noisy(before, 0, 10) | {"description": "x" * 100_000})
    assert tab.history.get().size < 20_000  # the repeated text compresses
    assert tab.undo() and tab.document == before and tab.can(HistoryStep.REDO)
    assert tab.redo() and tab.document["description"] == "x" * 100_000 and not tab.can(HistoryStep.REDO)


def test_an_edit_reads_no_step_of_the_history(student_client, tab):
    for i in range(30):
        student_client.post(f"/editor/{tab.pk}/nodes/print/move", {"x": str(24 * i), "y": "24"})
    with CaptureQueriesContext(connection) as queries:
        student_client.post(f"/editor/{tab.pk}/nodes/print/move", {"x": "0", "y": "48"})
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")]
    assert reads and not any('"snapshot"' in sql for sql in reads)


def test_the_tab_bar_reads_titles_not_documents(student_client, student, tab):
    for i in range(3):
        Tab.objects.create(owner=student, title=f"other {i}", position=i + 2)
    with CaptureQueriesContext(connection) as queries:
        body = student_client.get(f"/editor/{tab.pk}/").content.decode()
    assert all(f"other {i}" in body for i in range(3))
    loading_documents = [q["sql"] for q in queries.captured_queries
                         if q["sql"].startswith("SELECT") and '"graphs_tab"."document"' in q["sql"]]
    assert len(loading_documents) == 1  # the open tab's own
