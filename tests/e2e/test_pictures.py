"""A plot node's picture in a real Chromium: a small graph with Visualize is run, and its
picture is seen on the card and in the Inspector's Forward tab (by role img and its name),
with a Download PNG link that gives the PNG; the same without JavaScript."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import RUN_TIMEOUT_MS
from tests.e2e.test_walkthrough import Editor, chain_graph

pytestmark = pytest.mark.e2e

TITLE = "Eight numbers"
ALT = re.compile(rf"^{TITLE}: 8 values from -2 to 5")


def graph() -> bytes:
    return chain_graph("Picture test", "A line of eight numbers.", [
        ("input", "TensorInput", {"shape": "8", "dtype": "float32", "value_mode": "explicit",
                                  "values": [1, -2, 3, 0, 5, 2, -1, 4]}),
        ("vis", "Visualize", {"title": TITLE, "plot_type": "line"})], into="data")


def import_and_run(editor: Editor) -> None:
    editor.import_graph(graph(), "Visualize", "pictures.json")
    editor.run()
    # the session's first run may wait for the run workers to start (each imports torch)
    expect(editor.badge("Visualize")).to_have_text("Completed", timeout=6 * RUN_TIMEOUT_MS)
    if not editor.js:  # the page refreshes itself until the run ends; then load it once more
        expect(editor.run_status()).to_contain_text("Run succeeded", timeout=RUN_TIMEOUT_MS)


def check_pictures(editor: Editor) -> None:
    page = editor.page
    editor.select("Visualize")   # the page as rendered after the run (live updates carry badges only)
    on_card = editor.card("Visualize").get_by_role("img", name=ALT)
    expect(on_card).to_be_visible()
    assert page.evaluate("img => img.complete && img.naturalWidth", on_card.element_handle()) == 640

    forward = page.get_by_role("link", name="Forward", exact=True)
    if forward.count():
        editor.click(forward)
    output = page.get_by_role("article", name="Output image")
    picture = output.get_by_role("img", name=ALT)
    expect(picture).to_be_visible()
    assert page.evaluate("img => img.complete && img.naturalWidth", picture.element_handle()) == 640
    download = output.get_by_role("link", name="Download PNG")
    expect(download).to_be_visible()
    answer = page.request.get(download.get_attribute("href"))
    assert answer.status == 200 and answer.headers["content-type"] == "image/png"
    assert answer.body()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "attachment" in answer.headers["content-disposition"]

    editor.select("TensorInput")
    forward = page.get_by_role("link", name="Forward", exact=True)
    if forward.count():
        editor.click(forward)
    npy = page.get_by_role("link", name="Download tensor as NumPy .npy")
    expect(npy).to_be_visible()
    npy.focus()
    expect(npy).to_be_focused()
    csv = page.request.get(page.get_by_role("link", name="Download tensor as CSV").get_attribute("href"))
    assert csv.status == 200 and csv.text().splitlines() == ["1", "-2", "3", "0", "5", "2", "-1", "4"]


def test_a_visualize_picture_on_the_card_and_in_the_inspector(page: Page):
    editor = Editor(page, js=True)
    import_and_run(editor)
    check_pictures(editor)


def test_the_pictures_without_javascript(nojs_page: Page):
    editor = Editor(nojs_page, js=False)
    import_and_run(editor)
    check_pictures(editor)
