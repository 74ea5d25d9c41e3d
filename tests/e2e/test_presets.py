"""Presets and datasets as a student meets them: a preset found in the sidebar arrives as a
block of ready-wired nodes, and Enter subgraph shows them; a Dataset's node tab explains it.
On 1366x768 and 1920x1080, with and without JavaScript (CODEFYUI_SCREENS keeps shots)."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.test_screen import Screen

pytestmark = pytest.mark.e2e

PRESET = "Simple CNN Classifier"


def test_a_preset_arrives_as_a_block_of_its_nodes(screen_page):
    page, js = screen_page
    editor = Screen(page, js=js)
    editor.new_blank_graph()
    add = editor.sidebar.get_by_role("button", name=f"Add preset {PRESET}", exact=True)
    expect(add).to_contain_text("Preset · beginner · 6 nodes")
    editor.use(add)
    expect(editor.card(PRESET)).to_be_visible()
    editor.shot("preset-1-added")

    panel = editor.node_tab(PRESET)
    expect(panel.get_by_label("Feature maps after round 1", exact=True)).to_have_value("32")
    editor.shot("preset-2-params")
    side = editor.select_node(PRESET)
    editor.use(side.get_by_role("link", name="Enter subgraph"))
    inside = page.get_by_role("region", name=f"Inside {PRESET}", exact=True)
    for inner in ("Conv2d", "Activation", "MaxPool2d"):
        expect(inside.get_by_role("article", name=f"{inner} ({inner})", exact=True)).to_have_count(2)
    editor.fits()
    editor.shot("preset-3-inside")


def test_a_dataset_node_says_what_it_offers(screen_page):
    page, js = screen_page
    editor = Screen(page, js=js)
    editor.new_blank_graph()
    editor.add("Dataset")
    panel = editor.node_tab("Dataset")
    name = panel.get_by_label("Name", exact=True)
    editor.reachable(name)
    expect(name).to_have_value("Digits")
    editor.shot("dataset-node")
