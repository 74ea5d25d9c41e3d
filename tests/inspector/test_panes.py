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


def steps_html(tensors, description="", scalars=(), state=PageState(node="attn", run="r1", view="steps")):
    step = {"number": 1, "name": "scores", "description": description, "scalars": list(scalars),
            "tensors": [{"name": k, "key": f"step1.{k}", "view": view(v)} for k, v in tensors.items()]}
    return render_to_string("inspector/_steps.html", {
        "inspector": {"state": RowState(value=[{}]), "steps": [{"number": 1, "name": "scores"}], "step": step},
        "state": state, "tab": {"pk": 3}})


def test_a_step_tensor_larger_than_the_window_pages_with_the_page_state():
    """A Steps tensor beyond 32 rows gets paging links that keep the page's state and the step."""
    html = steps_html({"w": torch.zeros(40, 3)})
    assert "Next rows" in html and "node=attn&amp;run=r1&amp;view=steps&amp;o.step1.w=32%2C0&amp;step=1" in html


def test_a_step_description_is_markdown_with_mathml():
    html = steps_html({}, description=r"**Divide** each by the total: $p_i = e^{z_i} / Z$")
    assert "<strong>Divide</strong>" in html and "<math" in html and "$" not in html


def test_masked_scores_read_as_minus_infinity_never_an_error():
    """Masked attention scores hold −inf: the grid and its stats say so."""
    scores = torch.tensor([[0.5, float("-inf")], [0.25, 1.0]])
    html = steps_html({"scores": scores}, scalars=[("masked", "-Infinity")])
    assert html.count("-Infinity") == 2 and "min 0.25 · max 1 · mean 0.5833" in html
