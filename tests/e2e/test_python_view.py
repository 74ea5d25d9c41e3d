"""The Python view (issue 51) in a real Chromium: the walkthrough's graph as a PyTorch script, in
a dialog over the editor with JavaScript and on a page of its own without."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e  # (conftest marks every test under tests/e2e too)

LESSON = re.compile(r"^Softmax walkthrough")
FILENAME = "Softmax_walkthrough.py"


def open_walkthrough(page: Page) -> None:
    """The welcome screen's first lesson, as a tab of its own; its toolbar has the Python link."""
    page.goto("/editor/")
    page.get_by_role("button", name=LESSON).click()
    expect(python_link(page)).to_be_visible()


def python_link(page: Page):
    return page.get_by_role("toolbar", name="Graph").get_by_role("link", name="Python", exact=True)


def test_with_javascript_the_python_view_is_a_dialog_to_copy_download_and_close(page: Page):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_walkthrough(page)
    python_link(page).click()
    dialog = page.get_by_role("dialog", name="The graph as Python")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("heading", name="Softmax walkthrough as Python")).to_be_visible()
    expect(dialog).to_contain_text("All 4 nodes are written as plain PyTorch.")
    code = dialog.get_by_role("region", name="The Python code")
    expect(code).to_contain_text("softmax = torch.softmax(reshaped, dim=-1)")
    expect(code).to_be_focused()   # the keys scroll the code at once

    copy = dialog.get_by_role("button", name="Copy the code")
    expect(copy).to_be_visible()
    copy.click()
    expect(dialog.get_by_text(re.compile(r"^Copied"))).to_be_visible()
    assert "torch.softmax(reshaped, dim=-1)" in page.evaluate("navigator.clipboard.readText()")

    download = dialog.get_by_role("link", name=f"Download {FILENAME}")
    expect(download).to_be_visible()
    with page.expect_download() as made:
        download.click()
    assert made.value.suggested_filename == FILENAME
    with open(made.value.path(), encoding="utf-8") as script:
        assert "torch.softmax(reshaped, dim=-1)" in script.read()

    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(python_link(page)).to_be_focused()   # back where the student was

    python_link(page).click()   # and again, closed by its visible button
    expect(dialog).to_be_visible()
    dialog.get_by_role("link", name=re.compile(r"^Close")).click()
    expect(dialog).to_be_hidden()
    expect(python_link(page)).to_be_focused()


def test_without_javascript_the_python_view_is_a_page_with_the_script_and_a_way_back(nojs_page: Page):
    page = nojs_page
    open_walkthrough(page)
    python_link(page).click()
    expect(page.get_by_role("heading", name="Softmax walkthrough as Python")).to_be_visible()
    code = page.get_by_role("region", name="The Python code")
    expect(code).to_contain_text("softmax = torch.softmax(reshaped, dim=-1)")
    expect(page.get_by_role("button", name="Copy the code")).to_be_hidden()   # no script to copy with
    expect(page.get_by_text("To copy the code, select it, or download the file.")).to_be_visible()
    expect(page.get_by_role("link", name=f"Download {FILENAME}")).to_have_attribute("download", FILENAME)
    page.get_by_role("link", name="Back to the graph").click()
    expect(python_link(page)).to_be_visible()
    expect(page.get_by_role("heading", name="Softmax walkthrough as Python")).to_have_count(0)
