"""Lesson examples shipped in examples/ load and run as they are."""
from __future__ import annotations

import pytest

from apps.graphs import document
from apps.runs.engine import RunOptions, execute, plan_run
from tests.conftest import EXAMPLES


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.stem)
def test_every_example_runs(path):
    doc = document.load(path.read_text())
    outcome = execute(plan_run(doc), RunOptions(run_id=path.stem, seed=document.run_settings(doc)["seed"]),
                      lambda event: None)
    assert outcome.status == "succeeded", outcome.error
