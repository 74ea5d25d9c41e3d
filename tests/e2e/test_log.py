"""The Execution Log shows its newest rows: a run's rows pushed live keep its end in view while
the reader is there, and the page drawn at the run's end opens the log at its last row (the
panel holds about ten rows at 1366x768 and fifteen at 1920x1080; a run of this long chain
writes thirty). Without a script the page refreshes itself and opens the log at its top.
With CODEFYUI_SCREENS=<folder> each case leaves a screenshot there."""
from __future__ import annotations

import json
import os

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import RUN_TIMEOUT_MS, _collect_errors, _context, log_in

pytestmark = pytest.mark.e2e

LINKS = 25


def long_chain() -> bytes:
    nodes = [{"id": "start", "type": "Start", "position": {"x": 0, "y": 0}},
             {"id": "x", "type": "TensorInput", "position": {"x": 200, "y": 0},
              "data": {"params": {"shape": "2,3", "value_mode": "random", "seed": 1}}}]
    edges = [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "x"}]
    for i in range(LINKS):
        nodes.append({"id": f"a{i}", "type": "Activation", "position": {"x": 400 + 40 * i, "y": 120 * (i % 4)}})
        edges.append({"id": f"e{i}", "source": f"a{i - 1}" if i else "x", "sourceHandle": "tensor",
                      "target": f"a{i}", "targetHandle": "tensor"})
    return json.dumps({"name": "Long chain", "nodes": nodes, "edges": edges}).encode()


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)], ids=["1366", "1920"])
@pytest.mark.parametrize("javascript", [True, False], ids=["js", "nojs"])
def test_the_log_opens_at_its_newest_row(browser, web_server, student, request, javascript, size):
    context = _context(browser, web_server, viewport={"width": size[0], "height": size[1]},
                       java_script_enabled=javascript)
    page = context.new_page()
    _collect_errors(page, request)
    log_in(page, *student)
    page.goto("/editor/")
    page.get_by_label("Import…").set_input_files(
        files=[{"name": "long-chain.json", "mimeType": "application/json", "buffer": long_chain()}])
    with page.expect_navigation():
        page.get_by_role("button", name="Import", exact=True).click()
    page.get_by_role("button", name="Run", exact=True).first.click()
    log = page.get_by_role("list", name="Execution Log")
    last = log.get_by_text("Execution completed successfully")
    if javascript:
        expect(last).to_be_in_viewport(timeout=RUN_TIMEOUT_MS)
        expect(log.get_by_text("Execution started")).not_to_be_in_viewport()
    else:   # the page refreshes itself until the run ends; without a script the log opens at its top
        expect(page.locator("#run-status")).to_contain_text("Run succeeded", timeout=RUN_TIMEOUT_MS)
        expect(log.get_by_text("Execution started")).to_be_in_viewport()
    if os.environ.get("CODEFYUI_SCREENS"):   # a folder for the screenshots (never committed)
        page.screenshot(path=f"{os.environ['CODEFYUI_SCREENS']}/log-{request.node.callspec.id}.png")
    context.close()
