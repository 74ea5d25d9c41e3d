"""Runs → Inspect in a real Chromium (issue "What a class trips over", item 1): a run of another
tab opens that tab, never paints its statuses and log onto the graph on screen; a run whose tab
was closed unsaved says it cannot be shown. With and without JavaScript."""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import RUN_TIMEOUT_MS, _collect_errors, _context, log_in

pytestmark = pytest.mark.e2e


def graph(name: str, message: str) -> bytes:
    return json.dumps({"name": name, "nodes": [
        {"id": "start", "type": "Start", "position": {"x": 0, "y": 0}},
        {"id": "text", "type": "TextInput", "position": {"x": 240, "y": 0}, "data": {"params": {"value": message}}},
        {"id": "print", "type": "Print", "position": {"x": 480, "y": 0}}],
        "edges": [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "text"},
                  {"id": "e", "source": "text", "sourceHandle": "text", "target": "print", "targetHandle": "value"}]}).encode()


def import_graph(page, name: str, message: str) -> None:
    """From the welcome screen, or from the toolbar's File menu once a tab is open."""
    menu = page.locator("details.file-menu")
    if menu.count():
        menu.locator("summary").click()
        form = menu
    else:
        form = page
    form.get_by_label("Import…").set_input_files(
        files=[{"name": f"{name}.json", "mimeType": "application/json", "buffer": graph(name, message)}])
    with page.expect_navigation():
        form.get_by_role("button", name="Import", exact=True).click()


def inspect_first_run(page) -> None:
    page.locator("details", has=page.get_by_text("Runs", exact=True)).first.locator("summary").click()
    page.get_by_role("button", name="Inspect").first.click()


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "nojs"])
def test_inspect_of_another_tabs_run_opens_that_tab(browser, web_server, student, request, javascript):
    context = _context(browser, web_server, viewport={"width": 1366, "height": 768}, java_script_enabled=javascript)
    page = context.new_page()
    _collect_errors(page, request)
    log_in(page, *student)
    page.goto("/editor/")
    import_graph(page, "Attention lesson", "attention says hello")
    page.get_by_role("button", name="Run", exact=True).first.click()
    expect(page.locator("#run-status")).to_contain_text("Run succeeded", timeout=RUN_TIMEOUT_MS)
    import_graph(page, "Digit lesson", "digits say hi")
    tabs = page.get_by_role("navigation", name="Open graphs")
    expect(tabs.get_by_role("link", name="Digit lesson")).to_have_attribute("aria-current", "page")
    inspect_first_run(page)
    expect(tabs.get_by_role("link", name="Attention lesson")).to_have_attribute("aria-current", "page")
    expect(page.get_by_role("list", name="Execution Log")).to_contain_text("attention says hello")
    context.close()
