"""Run is Stop while the tab's run goes (issue "What a class trips over", item 3): five quick
clicks on Run start one run, the toolbar offers Stop until it ends, then Run again."""
from __future__ import annotations

import json
import time

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import RUN_TIMEOUT_MS, _collect_errors, _context, log_in

pytestmark = pytest.mark.e2e


def gated(token: str) -> bytes:
    return json.dumps({"name": "Held training", "nodes": [
        {"id": "start", "type": "Start", "position": {"x": 0, "y": 0}},
        {"id": "x", "type": "TensorInput", "position": {"x": 220, "y": 0}, "data": {"params": {"shape": "2,2"}}},
        {"id": "gate", "type": "test:Gate", "position": {"x": 440, "y": 0}, "data": {"params": {"token": token}}},
        {"id": "print", "type": "Print", "position": {"x": 660, "y": 0}}],
        "edges": [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "x"},
                  {"id": "a", "source": "x", "sourceHandle": "tensor", "target": "gate", "targetHandle": "tensor"},
                  {"id": "b", "source": "gate", "sourceHandle": "tensor", "target": "print",
                   "targetHandle": "value"}]}).encode()


def test_five_quick_clicks_start_one_run_and_run_is_stop_meanwhile(browser, web_server, student, request):
    context = _context(browser, web_server, viewport={"width": 1366, "height": 768})
    page = context.new_page()
    _collect_errors(page, request)
    log_in(page, *student)
    page.goto("/editor/")
    token = f"run-button-{time.monotonic_ns()}"
    page.get_by_label("Import…").set_input_files(
        files=[{"name": "held.json", "mimeType": "application/json", "buffer": gated(token)}])
    with page.expect_navigation():
        page.get_by_role("button", name="Import", exact=True).click()
    toolbar = page.get_by_role("toolbar", name="Graph")
    toolbar.get_by_role("button", name="Run", exact=True).evaluate("b => { for (let i = 0; i < 5; i++) b.click(); }")
    expect(toolbar.get_by_role("button", name="Stop", exact=True)).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(toolbar.get_by_role("button", name="Run", exact=True)).to_have_count(0)
    page.locator("details", has=page.get_by_text("Runs", exact=True)).first.locator("summary").click()
    expect(page.get_by_role("button", name="Inspect")).to_have_count(0)    # nothing has ended yet
    expect(page.locator("#runs-body tbody tr")).to_have_count(1)
    (web_server.var_dir / f"e2e-gate-{token}").touch()
    expect(toolbar.get_by_role("button", name="Run", exact=True)).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#run-status")).to_contain_text("Run succeeded")
    context.close()
