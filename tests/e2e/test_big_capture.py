"""A capture of a million values in a real Chromium: its card's heat map and the Inspector's
Forward grid are made on a thread of their own (codefyui/heavy.py), and the student sees them
as for any capture, with and without JavaScript."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import RUN_TIMEOUT_MS
from tests.e2e.test_walkthrough import Editor, chain_graph

pytestmark = pytest.mark.e2e

HEAT = re.compile(r"^Heat map of the output \[1000, 1000\]: from 0 to ")


def graph() -> bytes:
    return chain_graph("A million values", "A 1000 × 1000 random tensor and its ReLU.", [
        ("big", "TensorCreate", {"shape": "1000,1000", "fill": "randn"}),
        ("relu", "Activation", {"function": "relu"})])


def check(editor: Editor) -> None:
    page = editor.page
    editor.import_graph(graph(), "Activation", "big.json")
    editor.run()
    expect(editor.badge("Activation")).to_have_text("Completed", timeout=6 * RUN_TIMEOUT_MS)
    if not editor.js:
        expect(editor.run_status()).to_contain_text("Run succeeded", timeout=RUN_TIMEOUT_MS)
    # the page as rendered after the run, its card pictures made off the request thread
    expect(editor.card("Activation").get_by_role("img", name=HEAT)).to_be_visible(timeout=RUN_TIMEOUT_MS)
    editor.select("Activation")
    forward = page.get_by_role("link", name="Forward", exact=True)
    if forward.count():
        editor.click(forward)
    output = page.get_by_role("article", name="Output tensor", exact=True)
    expect(output).to_contain_text("shape [1000, 1000] · float32 · min 0 · max ")
    expect(output.get_by_role("cell").first).to_be_visible()


def test_a_million_value_capture_with_javascript(page: Page):
    check(Editor(page, js=True))


def test_a_million_value_capture_without_javascript(nojs_page: Page):
    check(Editor(nojs_page, js=False))
