"""The Training pane: Epoch n/total, Loss, Best, the bar, the loss curve, the parameter and
epoch tables, and the epoch selector (Record on) — in the Inspector column and Node details."""
from __future__ import annotations

import pytest

from apps.editor.models import Tab
from apps.graphs import document
from apps.inspector import training
from apps.runs import service
from apps.runs.models import Run
from tests.runs.training_nodes import training_graph

pytestmark = pytest.mark.django_db(transaction=True)


def _tab(student, **settings):
    doc = document.normalise(training_graph(epochs=3))
    doc["settings"] = {**doc.get("settings", {}), **settings}
    return Tab.objects.create(owner=student, title="train", document=doc)


def _run(client, tab, student) -> Run:
    client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    return service.wait_for(Run.objects.filter(owner=student).latest("created").pk)


@pytest.fixture
def trained(student_client, student):
    tab = _tab(student)
    return tab, _run(student_client, tab, student)


def test_a_training_node_has_a_training_tab_and_others_do_not(student_client, trained):
    tab, run = trained
    body = student_client.get(f"/editor/{tab.pk}/?node=train&run={run.pk}").content.decode()
    assert ">Training<" in body
    other = student_client.get(f"/editor/{tab.pk}/?node=opt&run={run.pk}").content.decode()
    assert ">Training<" not in other
    assert ">Forward<" in student_client.get(f"/editor/{tab.pk}/?node=opt&run={run.pk}&view=training").content.decode()


def test_the_training_pane_shows_where_training_stands(student_client, trained):
    tab, run = trained
    body = student_client.get(f"/editor/{tab.pk}/?node=train&run={run.pk}&view=training").content.decode()
    assert "<dt>Epoch</dt><dd>3/3</dd>" in body and "<dt>Best</dt>" in body
    assert 'aria-label="Training progress"' in body and "Epoch 3/3 · batch 4/4" in body
    assert body.count('<polyline class="train"') == 1 and "Training loss" in body
    assert "<th scope=\"row\">Optimizer</th><td>SGD</td>" in body
    table = body[body.index('<table class="training-table epochs">'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr") == 4 and table.count('<span class="chip">best</span>') == 1  # head + 3 epochs


def test_the_card_shows_its_progress_bar_after_the_run(student_client, trained):
    tab, run = trained
    body = student_client.get(f"/editor/{tab.pk}/?run={run.pk}").content.decode()
    assert 'id="progress-train"' in body and "Epoch 3/3 · batch 4/4" in body


def test_the_epoch_selector_steps_through_recorded_epochs(student_client, trained):
    tab, run = trained
    url = f"/editor/{tab.pk}/?node=train&run={run.pk}&view=training"
    body = student_client.get(url).content.decode()
    assert all(f">Epoch {n}</a>" in body for n in (1, 2, 3))
    assert 'aria-current="true" class="current">Epoch 3</a>' in body and "After epoch 3" in body
    first = student_client.get(url + "&epoch=1").content.decode()
    assert "After epoch 1" in first and "<code>0.weight</code>" in first


def test_node_details_has_the_training_pane(student_client, trained):
    tab, run = trained
    body = student_client.get(f"/editor/{tab.pk}/details/train/?run={run.pk}&pane=training&epoch=2").content.decode()
    assert "<dt>Epoch</dt><dd>3/3</dd>" in body and "After epoch 2" in body
    assert f"pane=training&amp;epoch=1" in body


def test_with_record_off_nothing_is_captured_per_epoch(student_client, student):
    """Walkthrough step 7: the curve is still there (pushed status), the epochs are not."""
    tab = _tab(student, record_outputs=False)
    run = _run(student_client, tab, student)
    body = student_client.get(f"/editor/{tab.pk}/?node=train&run={run.pk}&view=training").content.decode()
    assert "<dt>Epoch</dt><dd>3/3</dd>" in body and ">Epoch 1</a>" not in body
    assert "Recording was off for this run" in body or "Run the graph to capture its values" in body


def test_before_a_run_the_pane_reads_nothing_captured(student_client, student):
    tab = _tab(student)
    body = student_client.get(f"/editor/{tab.pk}/?node=train&view=training").content.decode()
    assert "Nothing captured yet" in body


def test_the_live_fragment_is_the_pane_live_part(student_client, trained):
    tab, run = trained
    response = student_client.get(f"/editor/{tab.pk}/training/train/?run={run.pk}&node=train")
    body = response.content.decode()
    assert response.status_code == 200 and body.strip().startswith('<section class="training-live"')
    assert "<dt>Epoch</dt><dd>3/3</dd>" in body and "Weights by epoch" not in body


def test_the_loss_curve_draws_validation_dashed_and_marks_divergence():
    curve = training.loss_curve([1.0, 0.5, "Infinity"], [1.2, 0.7, "NaN"])
    assert curve.diverged and len(curve.train.split()) == 3 and len(curve.val.split()) == 3
    assert curve.train.split()[2].endswith(f",{training.TOP}")  # drawn at the top
    assert training.loss_curve([], []) is None


def test_grad_scaler_state_outside_fp16_reads_no_value_this_run(student_client, trained):
    """IN13: the node ran and left grad_scaler_state empty (None) outside fp16."""
    tab, run = trained
    body = student_client.get(f"/editor/{tab.pk}/?node=train&run={run.pk}&view=forward").content.decode()
    row = body[body.index('aria-label="Output grad_scaler_state"'):]
    assert row[:row.index("</article>")].count("No value this run") == 1


def test_the_diffusion_training_loop_has_the_training_pane(student_client, student):
    """DiffusionTrainingLoop reports TrainingLoop's progress fields, so its card and pane show them."""
    from tests.conftest import example
    doc = document.normalise(example("diffusion-tiny-train"))
    tab = Tab.objects.create(owner=student, title="diffusion", document=doc)
    run = _run(student_client, tab, student)
    body = student_client.get(f"/editor/{tab.pk}/?node=train&run={run.pk}&view=training").content.decode()
    assert "<dt>Epoch</dt><dd>8/8</dd>" in body and "Epoch 8/8 · batch 2/2" in body
    assert "<th scope=\"row\">Optimizer</th><td>Adam</td>" in body
    assert body.count('<polyline class="train"') == 1
