"""Node details' panes are small tab classes: each node gets the ones that apply, in the seed's order."""
from __future__ import annotations

import torch
from django.template.loader import render_to_string

from apps.editor.state import PageState
from apps.graphs.nodes.base import resolve
from apps.inspector.capture_state import RowState
from apps.inspector.panes import panes_for
from apps.inspector.values import view


def slugs(cls, has_run):
    return [p.slug for p in panes_for(cls, has_run)]


def test_a_node_before_any_run_has_inputs_outputs_stats_and_docs():
    assert slugs(resolve("Reshape"), has_run=False) == ["inputs", "outputs", "stats", "docs"]


def test_a_run_adds_steps_and_backward_after_the_outputs():
    assert slugs(resolve("Reshape"), has_run=True) == ["inputs", "outputs", "steps", "backward", "stats", "docs"]


def test_a_block_opens_on_its_subgraph():
    assert slugs(resolve("Subgraph"), has_run=False)[0] == "subgraph"


def test_a_note_still_has_the_panes_that_need_no_class():
    assert slugs(None, has_run=False) == ["inputs", "outputs", "stats", "docs"]


def test_a_step_tensor_larger_than_the_window_pages_with_the_page_state():
    """A Steps tensor beyond 32 rows gets paging links that keep the page's state."""
    steps = [{"number": 1, "name": "scores", "description": "", "scalars": {}, "tensors": [("w", view(torch.zeros(40, 3)))]}]
    html = render_to_string("inspector/_steps.html", {
        "inspector": {"state": RowState(value=steps), "steps": steps},
        "state": PageState(node="attn", run="r1", view="steps"), "tab": {"pk": 3}})
    assert "Next rows" in html and "node=attn&amp;run=r1&amp;view=steps" in html
