"""The welcome screen and an imported CodefyUI graph, as a student sees them (issue "What a
class trips over", item 10): the open tabs' bar sits whole under the header, and a graph
CodefyUI placed at negative positions lands on the canvas, clear of the sidebar."""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import _collect_errors, _context, log_in

pytestmark = pytest.mark.e2e

FROM_CODEFYUI = json.dumps({"name": "Far left", "nodes": [
    {"id": "start-1", "type": "Start", "position": {"x": -150, "y": 200}},
    {"id": "print-1", "type": "Print", "position": {"x": 50, "y": 200}}],
    "edges": [{"id": "t", "type": "trigger", "source": "start-1", "sourceHandle": "trigger", "target": "print-1"}]})


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "nojs"])
def test_the_tab_bar_is_whole_and_an_import_lands_on_the_canvas(browser, web_server, student, request, javascript):
    context = _context(browser, web_server, viewport={"width": 1366, "height": 768}, java_script_enabled=javascript)
    page = context.new_page()
    _collect_errors(page, request)
    log_in(page, *student)
    page.goto("/editor/")
    page.get_by_label("Import…").set_input_files(
        files=[{"name": "far-left.json", "mimeType": "application/json", "buffer": FROM_CODEFYUI.encode()}])
    with page.expect_navigation():
        page.get_by_role("button", name="Import", exact=True).click()
    canvas = page.get_by_role("region", name="Canvas").bounding_box()
    start = page.locator("[data-node='start-1']").bounding_box()
    assert start["x"] >= canvas["x"] and start["y"] >= canvas["y"]

    page.goto("/")
    expect(page.get_by_role("heading", name="Your open tabs")).to_be_visible()
    header = page.get_by_role("banner").bounding_box()
    tabs = page.get_by_role("navigation", name="Open graphs")
    bar = tabs.bounding_box()
    assert bar["y"] >= header["y"] + header["height"] - 1
    link = tabs.get_by_role("link", name="Far left").bounding_box()
    assert link["y"] >= bar["y"] and link["y"] + link["height"] <= bar["y"] + bar["height"] + 1
    context.close()
