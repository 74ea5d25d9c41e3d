"""The recorder's writes, through the ORM: what a run's events said reads back from its row."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from apps.runs.recorder import Recorder
from apps.runs.engine import events as ev
from apps.runs.models import Run

pytestmark = pytest.mark.django_db
SUMMARY = {"tensor": {"shape": [1, 4], "min": -0.5, "max": 2.25}}
STARTED, FINISHED = 1_796_466_615.123456, 1_796_466_616.5


def test_a_runs_events_read_back_from_its_row(student):
    run = Run.objects.create(owner=student, options={"seed": 42}, graph_name="CNN ✓")
    recorder = Recorder(str(run.pk))    # the id as the worker sends it: text
    recorder(ev.Event(ev.RUN_STARTED, recorder.run_id, data={"device": "cpu"}, time=STARTED))
    recorder(ev.Event(ev.NODE_COMPLETED, recorder.run_id, "a", label="a", summary=SUMMARY))
    recorder(ev.Event(ev.LOG, recorder.run_id, "a", label="a", text="Print: tensor([1., 2.]) — naïve ✓"))
    recorder(ev.Event(ev.RUN_COMPLETED, recorder.run_id, time=FINISHED))   # an ending is written at once
    row = Run.objects.get(pk=run.pk)
    assert (row.status, row.device, row.error) == (Run.Status.SUCCEEDED, "cpu", "")
    assert row.started == datetime.fromtimestamp(STARTED, tz=timezone.utc)
    assert row.finished == datetime.fromtimestamp(FINISHED, tz=timezone.utc)
    assert row.nodes == {"a": {"status": "completed", "summary": SUMMARY}}
    assert row.log == recorder.log and any(entry["text"].endswith("naïve ✓") for entry in row.log)
    assert (row.options, row.graph_name, row.created) == ({"seed": 42}, "CNN ✓", run.created)   # the rest untouched


def test_a_deleted_runs_recorder_writes_nothing_and_does_not_fail(student):
    run = Run.objects.create(owner=student)
    recorder = Recorder(str(run.pk))
    run.delete()
    recorder(ev.Event(ev.RUN_FAILED, recorder.run_id, error="gone", level="error"))
    assert not Run.objects.filter(pk=recorder.run_id).exists()
