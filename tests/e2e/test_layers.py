"""The Layers editor of a SequentialModel in a real Chromium, with and without JavaScript, on
a school laptop's and a classroom display's screen: a sample input shape shows the shape after
every layer, a new layer shows its own, and a layer that does not fit says why.
With CODEFYUI_SCREENS=<folder> each step leaves a screenshot there."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.test_inspector import Inspecting

pytestmark = pytest.mark.e2e

SCREENS = os.environ.get("CODEFYUI_SCREENS", "")


class LayersEditor(Inspecting):
    """Node details of the SequentialModel: the dialog with JavaScript, a page without."""

    @property
    def details(self):
        return self.page.get_by_role("dialog", name="Node details") if self.js else self.page.get_by_role("main")

    def post(self, button) -> None:
        if self.js:
            self.swapped("#details", button.click)
        else:
            self.click(button)

    def shot(self, name: str) -> None:
        if SCREENS:
            Path(SCREENS).mkdir(parents=True, exist_ok=True)
            # caret="initial": hiding the caret would inject a style the CSP refuses
            screen = getattr(self.page, "screen_name", "1920x1200-nojs")
            self.page.screenshot(path=f"{SCREENS}/{screen}-layers-{name}.png", caret="initial")


def test_add_a_layer_and_see_the_shape_after_it(screen_page):
    page, js = screen_page
    editor = LayersEditor(page, js)
    editor.new_blank_graph()
    editor.add_node("SequentialModel")
    link = editor.select("SequentialModel").get_by_role("link", name="Open details", exact=True)
    if js:
        link.click()
    else:
        editor.click(link)
    details = editor.details
    expect(details.get_by_role("link", name="Layers", exact=True)).to_have_attribute("aria-current", "page")
    editor.shot("opened")

    details.get_by_role("textbox", name="Sample input shape").fill("64, 1, 28, 28")
    editor.post(details.get_by_role("button", name="Show shapes"))
    expect(details.get_by_label("Shape after f", exact=True)).to_have_text("→ [64, 3136]")
    expect(details.get_by_label("Shape after l2", exact=True)).to_have_text("→ [64, 10]")
    editor.shot("shapes")

    details.get_by_role("combobox", name="Add a layer").select_option("Softmax")
    editor.post(details.get_by_role("button", name="Add layer"))
    expect(details.get_by_label("Shape after softmax1", exact=True)).to_have_text("→ [64, 10]")

    details.get_by_role("button", name="Remove p2", exact=True).scroll_into_view_if_needed()
    editor.post(details.get_by_role("button", name="Remove p2", exact=True))
    expect(details.get_by_text("Linear expects 3136 features, gets 12544")).to_be_visible()
    editor.shot("misfit")


def test_make_a_model_from_layers_on_the_canvas_without_javascript(nojs_page):
    """Select → tick the canvas layers → Make model from layers: a SequentialModel with those
    layers appears, selected, and its Layers tab lists them."""
    page = nojs_page
    editor = LayersEditor(page, js=False)
    editor.new_blank_graph()
    editor.add_node("Linear")
    editor.add_node("Activation")
    # FALLBACK: a <summary> has no ARIA role Playwright can match; located in its named group.
    page.get_by_role("group", name="Select", exact=True).locator("summary").click()
    form = page.get_by_role("form", name="Select nodes")
    form.get_by_role("checkbox", name=re.compile(r"^Linear\b")).check()
    form.get_by_role("checkbox", name=re.compile(r"^Activation\b")).check()
    editor.shot("select")
    editor.click(form.get_by_role("button", name="Make model from layers", exact=True))
    panel = editor.panel("SequentialModel")
    expect(panel).to_be_visible()
    editor.click(panel.get_by_role("link", name="Open details", exact=True))
    expect(editor.details.get_by_role("button", name="Remove linear-1", exact=True)).to_be_visible()
    expect(editor.details.get_by_role("button", name="Remove activation-1", exact=True)).to_be_visible()
    editor.shot("from-canvas")
