"""A node's progress on its way to the page: the recorder keeps it with the node's status, and
the socket turns it into the card's bar."""
from __future__ import annotations

from apps.runs.recorder import Recorder
from apps.runs.consumers import fragment
from apps.runs.engine import events as ev
from apps.runs.status import progress_line

REPORT = {"epoch": 3, "epochs": 10, "batch": 2, "batches": 4, "losses": [0.9, 0.7]}


def test_the_recorder_keeps_the_latest_progress_after_the_node_completes():
    recorder = Recorder("r")
    recorder._record(ev.Event(ev.NODE_RUNNING, "r", "train"))
    recorder._record(ev.Event(ev.PROGRESS, "r", "train", data={**REPORT, "batch": 1}))
    recorder._record(ev.Event(ev.PROGRESS, "r", "train", data=REPORT))
    recorder._record(ev.Event(ev.NODE_COMPLETED, "r", "train", summary={}))
    assert recorder.nodes["train"] == {"status": "completed", "summary": {}, "progress": REPORT}
    assert recorder.log == [{"node": "train", "label": "train", "text": "Node train completed", "level": "info"}]


def test_a_progress_event_becomes_the_card_bar_swapped_out_of_band():
    html = fragment({"kind": ev.PROGRESS, "run_id": "r", "node_id": "train", "data": REPORT})
    assert html.startswith('<div id="progress-train" class="card-progress" hx-swap-oob="true">')
    assert 'max="40" value="10"' in html and "Epoch 3/10 · batch 2/4" in html


def test_a_node_inside_a_block_pushes_no_bar():
    """Its card is not on the outer canvas, so nothing would receive it."""
    assert fragment({"kind": ev.PROGRESS, "run_id": "r", "node_id": "block/train", "data": REPORT}) == ""


def test_progress_without_batches_counts_epochs():
    assert progress_line({"epoch": 2, "epochs": 5}) == {"text": "Epoch 2/5", "value": 1, "max": 5}
    assert progress_line(None) is None


def test_a_sampler_and_map_report_steps_and_items_on_their_cards_bar():
    """DDPMSampler's step/of and Map's item/items read as the card's bar, as a training node's epochs do."""
    from apps.graphs.nodes.base import registry

    assert progress_line({"step": 7, "of": 20}) == {"text": "Step 7/20", "value": 7, "max": 20}
    assert progress_line({"item": 2, "items": 5}) == {"text": "Item 2/5", "value": 2, "max": 5}
    assert progress_line({"text": "an answer"}) is None
    assert registry()["DDPMSampler"].reports_progress and registry()["Map"].reports_progress
    assert not registry()["DDPMSampler"].reports_training   # no Training pane for a sampler
