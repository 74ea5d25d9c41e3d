"""The Backward tab in the editor page, its row fragment and Node details' Backward pane."""
from __future__ import annotations

import re

import pytest

from apps.editor.models import Tab
from apps.runs import service
from apps.runs.models import Run
from tests.runs.test_gradients import INPUT, chain

pytestmark = pytest.mark.django_db(transaction=True)

LINEAR = ("Linear", {"in_features": 4, "out_features": 2})


def make_tab(student, *specs, **settings):
    doc = chain(*specs)
    doc["settings"].update({"capture_gradients": True, **settings})
    return Tab.objects.create(owner=student, title="grads", document=doc)


def run_tab(client, tab, student):
    client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    run = service.wait_for(Run.objects.filter(owner=student).latest("created").pk)
    assert run.status == "succeeded", run.error
    return run


def backward(client, tab, run, node, extra=""):
    return client.get(f"/editor/{tab.pk}/?node={node}&run={run.pk}&view=backward{extra}").content.decode()


def test_a_layer_lists_output_and_weight_gradients_under_badges(student_client, student):
    """GR2, GR3: Output gradients (one per output port) and Weight gradients (one per parameter),
    each under a badge with its verdict and ‖g‖, each a grid shaded by |g|."""
    tab = make_tab(student, INPUT, LINEAR, ("BackwardOnce", {}))
    run = run_tab(student_client, tab, student)
    body = backward(student_client, tab, run, "n1")
    assert "Output gradients (1)" in body and "Weight gradients (2)" in body
    assert 'aria-label="Gradient of weight"' in body and 'aria-label="Gradient of bias"' in body
    # d sum / d bias = 3 per entry (batch of 3): ‖g‖ = sqrt(9 + 9)
    assert '<span class="health health-healthy">healthy · ‖g‖ 4.2426</span>' in body
    assert "Shaded by |g|" in body and 'data-heat="75"' in body and 'title="changed"' not in body
    assert "Capture gradients: backward pass from sum() of BackwardOnce&#x27;s tensor [3, 2]" in body


def test_the_per_layer_summary_has_one_row_per_layer(student_client, student):
    """GR1: a row per layer with ‖g‖ and its verdict, the inspected node's marked."""
    tab = make_tab(student, INPUT, LINEAR, ("Activation", {"function": "sigmoid"}),
                   ("Linear", {"in_features": 2, "out_features": 2}), ("BackwardOnce", {}))
    run = run_tab(student_client, tab, student)
    body = backward(student_client, tab, run, "n3")
    assert "Gradients by layer (2)" in body
    rows = re.findall(r'<tr( class="here")?><th scope="row">Linear', body)
    assert rows == ["", ' class="here"']


def test_a_vanishing_gradient_says_so_in_words(student_client, student):
    """GR3: verdicts are words on their colour, never colour alone."""
    tab = make_tab(student, ("TensorInput", {"shape": "1,4", "value_mode": "zeros"}), LINEAR, ("BackwardOnce", {}))
    run = run_tab(student_client, tab, student)
    body = backward(student_client, tab, run, "n1")
    assert '<span class="health health-vanishing">vanishing · ‖g‖ 0</span>' in body  # zero input: zero weight gradient


def test_an_output_that_does_not_lead_to_the_loss_has_no_gradient(student_client, student):
    tab = make_tab(student, INPUT, LINEAR, ("Linear", {"in_features": 2, "out_features": 2}), auto_synthesize_loss=True)
    tab.document["nodes"][2]["data"]["params"]["out_features"] = 8  # the first Linear is now the largest output
    tab.document["nodes"][3]["data"]["params"]["in_features"] = 8
    tab.save()
    run = run_tab(student_client, tab, student)
    assert "No gradient: this value does not lead to" in backward(student_client, tab, run, "n2")


def test_without_a_target_the_tab_says_why(student_client, student):
    """SP14: no BackwardOnce, no TrainingLoop, Auto-synthesize loss off: the tab says why."""
    tab = make_tab(student, INPUT, LINEAR)
    run = run_tab(student_client, tab, student)
    body = backward(student_client, tab, run, "n1")
    assert "No gradients captured" in body and "turn on Auto-synthesize loss" in body


def test_a_run_without_capture_gradients_shows_the_empty_state(student_client, student):
    tab = make_tab(student, INPUT, LINEAR, ("BackwardOnce", {}), capture_gradients=False)
    run = run_tab(student_client, tab, student)
    body = backward(student_client, tab, run, "n1")
    assert "No gradients captured" in body and "Enable Capture gradients" in body


def test_a_rank_3_gradient_follows_the_chosen_slice(student_client, student):
    """GR3: any rank: the grid shows the chosen slice, shaded relative to its own largest |g|;
    choosing a slice re-renders that one row."""
    tab = make_tab(student, ("TensorInput", {"shape": "2,3,4", "value_mode": "random", "seed": 2}), LINEAR,
                   ("BackwardOnce", {}))
    run = run_tab(student_client, tab, student)
    body = backward(student_client, tab, run, "n0", "&s.grad.tensor=1")
    assert "showing the grid at dim 0 = 1" in body and "<code>[1, :, :]</code>" in body
    response = student_client.get(f"/editor/{tab.pk}/inspect/n0/row",
                                  {"run": run.pk, "node": "n0", "key": "grad.tensor", "s.grad.tensor": "1"})
    fragment = response.content.decode()
    assert response.status_code == 200 and fragment.count("<article") == 1 and "showing the grid at dim 0 = 1" in fragment
    assert "health-" in fragment


def test_node_details_has_the_same_backward_pane(student_client, student):
    """GR2: Node details' Backward pane lists the same gradients."""
    tab = make_tab(student, INPUT, LINEAR, ("BackwardOnce", {}))
    run = run_tab(student_client, tab, student)
    body = student_client.get(f"/editor/{tab.pk}/details/n1/?run={run.pk}&pane=backward").content.decode()
    assert "Weight gradients (2)" in body and "Gradients by layer (1)" in body


def test_the_settings_form_offers_auto_synthesize_loss_only_with_capture_gradients(student_client, student):
    """SP14: Auto-synthesize loss is disabled, and shown off, while Capture gradients is off."""
    tab = make_tab(student, INPUT, LINEAR, capture_gradients=False, auto_synthesize_loss=True)
    body = student_client.get(f"/editor/{tab.pk}/?settings=1").content.decode()
    box = re.search(r'<input type="checkbox" name="auto_synthesize_loss"[^>]*>', body)[0]
    assert "disabled" in box and "checked" not in box
