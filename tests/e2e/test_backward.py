"""The Backward tab in a real Chromium (issue 14, Gradients): the lesson "Why gradients vanish"
run from the welcome screen, then a sigmoid layer's Backward tab, on 1366x768 and 1920x1080,
with and without JavaScript. With CODEFYUI_SCREENS=<folder> each step leaves a screenshot."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.test_screen import Screen

pytestmark = pytest.mark.e2e

LESSON_RUN_MS = 90_000   # 48 nodes on a busy 2-core server


def test_the_backward_tab_shows_the_sigmoid_networks_gradients_vanish(screen_page):
    """GR1, GR2, GR3: after the lesson's run, a sigmoid layer's Backward tab lists its output
    and weight gradients under verdict badges, and Gradients by layer shows the sigmoid
    network's first layers vanishing while the ReLU network's are healthy."""
    page, js = screen_page
    editor = Screen(page, js=js)
    page.goto("/editor/")
    editor.use(page.get_by_role("button", name=re.compile(r"^Why gradients vanish")))
    expect(editor.card("Sigmoid L1")).to_be_visible()
    editor.run()
    expect(editor.run_status()).to_contain_text("Run succeeded", timeout=LESSON_RUN_MS)
    if js:
        page.wait_for_function(f"() => {editor.SETTLED}")
    else:
        expect(page.locator('meta[http-equiv="refresh"]')).to_have_count(0, timeout=LESSON_RUN_MS)

    editor.select_node("Sigmoid L1")
    editor.show_tab("Backward")
    inspector = editor.inspector
    expect(inspector).to_contain_text("backward pass from sum() of BackwardOnce's tensor")
    weights = inspector.get_by_role("region", name="Weight gradients")
    weight = weights.get_by_role("article", name="Gradient of weight", exact=True)
    expect(weight).to_contain_text("vanishing · ‖g‖")
    expect(inspector.get_by_role("region", name="Output gradients").get_by_role(
        "article", name="Gradient of tensor", exact=True)).to_be_visible()
    layers = inspector.get_by_role("table")
    expect(layers.get_by_role("row").filter(has_text=re.compile(r"^Sigmoid L1\b"))).to_contain_text("vanishing")
    expect(layers.get_by_role("row").filter(has_text=re.compile(r"^ReLU L1\b"))).to_contain_text("healthy")
    editor.reachable(inspector.get_by_text(re.compile(r"^Gradients by layer \(22\)$")))
    editor.shot("backward-sigmoid-layer-1")
    editor.reachable(weight)
    editor.shot("backward-weight-gradient")
