"""The full-size viewers in a real Chromium (issue 17, seed FV1-FV5, reference §14): the attention
heatmap and the embedding scatter in a dialog over the canvas, drawn with plotly in the dialog's
frame page under that page's own Content-Security-Policy (any refusal, in the editor or in the
frame, fails the test: conftest), and their pages without JavaScript. With
CODEFYUI_SCREENS=<folder> each viewer leaves screenshots at 1366×768 and 1920×1080 there.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import RUN_TIMEOUT_MS, SCREENS
from tests.e2e.test_walkthrough import Editor

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "attention-viewers.json"
SHOTS = os.environ.get("CODEFYUI_SCREENS", "")
LABELS = ("Start", "TensorInput", "Edu-MultiHeadAttention", "AttentionHeatmap", "AttentionMask", "EmbeddingScatter")
FOOTER = re.compile(r"^40 points · (\d+)% · (\d+) hidden$")


def open_and_run(page: Page, js: bool = True) -> Editor:
    editor = Editor(page, js=js)
    editor.import_graph(EXAMPLE.read_bytes(), "EmbeddingScatter", "viewers.json")
    editor.run()
    # the first run of a fresh server waits for its worker process (it imports torch)
    expect(editor.badge("EmbeddingScatter")).to_have_text("Completed", timeout=6 * RUN_TIMEOUT_MS)
    for label in ("AttentionHeatmap", "AttentionMask", "Edu-MultiHeadAttention"):
        expect(editor.badge(label)).to_have_text("Completed", timeout=RUN_TIMEOUT_MS)
    if not js:
        page.reload()
    # the pictures arrive with the page's re-render after the run
    expect(editor.card("EmbeddingScatter").get_by_role("link", name="Open detailed view")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    return editor


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{SHOTS}/viewers-{name}.png")


def viewer(page: Page):
    return page.get_by_role("dialog")


def inside(page: Page):
    """The viewer's frame page: plotly draws there, under its own CSP."""
    return viewer(page).locator("iframe").content_frame


def test_fv1_the_cards_have_view_full_and_open_detailed_view(page: Page):
    """FV1: the five attention cards (here four of them, CrossAttention in the view tests) have
    View full; the scatter card has Open detailed view; the inline pictures are SVG."""
    editor = open_and_run(page)
    for label in ("Edu-MultiHeadAttention", "AttentionHeatmap", "AttentionMask"):
        card = editor.card(label)
        expect(card.get_by_role("link", name="View full")).to_be_visible()
        expect(card.get_by_role("img", name=re.compile(r"^Attention (weights|mask)"))).to_be_visible()
    expect(editor.card("EmbeddingScatter").get_by_role("img", name="Embedding scatter of 40 points")).to_be_visible()


def test_fv2_fv5_heatmap_viewer_opens_closes_and_survives_the_canvas(page: Page):
    """FV2, FV5: View full opens the heatmap over the canvas with a plotly panel per head, a
    tooltip with the value and the token pair, the footer seq_len = 6 · row-normalised colours;
    Esc closes it (also with the focus inside the viewer's frame); it survives an Auto layout
    (the editor re-rendered under it), a canvas zoom and a scroll; × and a click outside close it."""
    editor = open_and_run(page)
    page.set_viewport_size(SCREENS["1920x1080"])
    editor.card("Edu-MultiHeadAttention").get_by_role("link", name="View full").click()
    dialog, frame = viewer(page), inside(page)
    expect(dialog).to_be_visible()
    expect(frame.get_by_text("seq_len = 6 · row-normalised colours")).to_be_visible()
    h0 = frame.get_by_role("img", name=re.compile(r"^h0: attention weights"))
    expect(h0).to_be_visible()
    expect(frame.get_by_role("img", name=re.compile(r"^h1: attention weights"))).to_be_visible()
    expect(frame.get_by_text("click outside or press Esc to close")).to_be_visible()
    h0.locator(".nsewdrag").hover()   # FALLBACK: plotly's plot area has no role; the middle cell's tooltip
    expect(frame.get_by_text(re.compile(r"^head 0 · w\[\d, \d\] = \d\.\d{3}$"))).to_be_visible()
    frame.get_by_label("Colormap").select_option("RdBu")
    expect(frame.get_by_label("Colormap")).to_have_value("RdBu")
    shot(page, "heatmap-js-1920x1080")
    frame.get_by_text("seq_len = 6 · row-normalised colours").click()   # the focus inside the frame
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    # zoom and scroll the canvas, then the viewer again: full size, above everything
    page.locator("#canvas-wrap").hover()
    page.keyboard.down("Control")
    page.mouse.wheel(0, -200)
    page.keyboard.up("Control")
    page.mouse.wheel(0, 300)
    editor.card("AttentionHeatmap").get_by_role("link", name="View full").click()
    expect(frame.get_by_text("seq_len = 6 · row-normalised colours")).to_be_visible()
    box = dialog.bounding_box()
    assert box["width"] > 0.9 * 1920 and box["height"] > 0.9 * 1080
    page.mouse.click(5, 5)            # outside: on the backdrop
    expect(dialog).to_have_count(0)
    editor.card("AttentionMask").get_by_role("link", name="View full").click()
    expect(frame.get_by_text(re.compile(r"^seq_len = 6$"))).to_be_visible()   # a mask: absolute colours
    page.set_viewport_size(SCREENS["1366x768"])
    shot(page, "mask-js-1366x768")
    dialog.get_by_role("button", name="Close viewer").click()
    expect(dialog).to_have_count(0)
    page.set_viewport_size(SCREENS["1920x1080"])
    editor.card("Edu-MultiHeadAttention").get_by_role("link", name="View full").click()
    expect(frame.get_by_text("seq_len = 6 · row-normalised colours")).to_be_visible()
    page.keyboard.press("Escape")     # the focus on the editor's side of the dialog
    expect(dialog).to_have_count(0)
    editor.card("Edu-MultiHeadAttention").get_by_role("link", name="View full").click()
    expect(frame.get_by_text("seq_len = 6 · row-normalised colours")).to_be_visible()
    page.keyboard.press("Shift+L")    # Auto layout: #editor is swapped under the viewer
    page.wait_for_function("() => !document.querySelector('.htmx-request')")
    expect(dialog).to_be_visible()
    expect(frame.get_by_role("img", name=re.compile(r"^h1: attention weights"))).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)


def test_fv3_fv4_scatter_viewer(page: Page):
    """FV3, FV4: the scatter viewer lists the 60 nearest (here all 40) under Nearest to view
    centre, filters them, centres on a clicked label, hides and shows a point with its eye and
    brings every point back with Show all; a drag pans in plotly (the list follows, through
    plotly's relayout event), the wheel and the zoom buttons zoom, reset fits; the footer counts
    points, zoom and hidden ones; Esc in the frame closes it."""
    editor = open_and_run(page)
    page.set_viewport_size(SCREENS["1920x1080"])
    card = editor.card("EmbeddingScatter")
    card.get_by_role("img", name="Embedding scatter of 40 points").dblclick()   # a double-click opens it too
    dialog, frame = viewer(page), inside(page)
    side = frame.get_by_role("complementary", name="Nearest to view centre")
    expect(side.get_by_role("heading", name="Nearest to view centre")).to_be_visible()
    rows = side.get_by_role("listitem")
    expect(rows).to_have_count(40)
    footer = frame.get_by_text(FOOTER)
    expect(footer).to_have_text("40 points · 100% · 0 hidden")
    shot(page, "scatter-js-1920x1080")
    first_before = rows.first.get_by_role("button").first.inner_text()

    plot = frame.locator("[data-plot=scatter]")   # FALLBACK: plotly's plot has no role
    box = plot.bounding_box()
    page.mouse.move(box["x"] + 40, box["y"] + 40)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 40, box["y"] + box["height"] - 40, steps=8)
    page.mouse.up()
    expect(rows.first.get_by_role("button").first).not_to_have_text(first_before)   # the nearest follow the pan
    expect(footer).to_have_text("40 points · 100% · 0 hidden")                      # a pan keeps the zoom

    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -400)
    expect(footer).not_to_have_text("40 points · 100% · 0 hidden")
    zoomed = int(FOOTER.match(footer.inner_text()).group(1))
    assert zoomed > 100
    frame.get_by_role("button", name="Reset view").click()
    expect(footer).to_have_text("40 points · 100% · 0 hidden")
    frame.get_by_role("button", name="Zoom in").click()
    expect(footer).to_have_text("40 points · 140% · 0 hidden")
    frame.get_by_role("button", name="Zoom out").click()
    frame.get_by_role("button", name="Zoom out").click()
    expect(footer).to_have_text("40 points · 71% · 0 hidden")
    for _ in range(8):
        frame.get_by_role("button", name="Zoom out").click()
    expect(footer).to_have_text("40 points · 25% · 0 hidden")   # clamped at 25 %
    frame.get_by_role("button", name="Reset view").click()

    side.get_by_role("searchbox", name="Filter labels…").fill("#1")
    expect(rows).to_have_count(11)      # #1, #10 ... #19
    side.get_by_role("searchbox", name="Filter labels…").fill("zzz")
    expect(side.get_by_text("No labels match")).to_be_visible()
    side.get_by_role("searchbox", name="Filter labels…").fill("")
    expect(rows).to_have_count(40)

    target = rows.nth(30).get_by_role("button").first
    name = target.inner_text()
    target.click()
    expect(rows.first.get_by_role("button").first).to_have_text(name)   # centred on it: now the nearest

    rows.first.get_by_role("button", name="Hide").click()
    expect(footer).to_have_text("40 points · 100% · 1 hidden")
    expect(rows.first.get_by_role("button", name="Show")).to_be_visible()
    rows.nth(1).get_by_role("button", name="Hide").click()
    expect(footer).to_have_text("40 points · 100% · 2 hidden")
    rows.first.get_by_role("button", name="Show").click()
    expect(footer).to_have_text("40 points · 100% · 1 hidden")
    side.get_by_role("button", name="Show all").click()
    expect(footer).to_have_text("40 points · 100% · 0 hidden")
    expect(side.get_by_role("button", name="Show all")).to_be_hidden()
    side.get_by_role("searchbox", name="Filter labels…").focus()   # the focus inside the frame
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    page.set_viewport_size(SCREENS["1366x768"])
    card.get_by_role("link", name="Open detailed view").click()
    expect(footer).to_have_text("40 points · 100% · 0 hidden")
    expect(rows).to_have_count(40)
    shot(page, "scatter-js-1366x768")


def test_the_cards_and_viewers_look_right_at_both_screen_sizes(page: Page):
    """(no checklist id) Screenshots of the cards and each viewer at both sizes, for a person to look at."""
    editor = open_and_run(page)
    for size in SCREENS:
        page.set_viewport_size(SCREENS[size])
        editor.card("AttentionHeatmap").scroll_into_view_if_needed()
        shot(page, f"cards-js-{size}")
        editor.card("Edu-MultiHeadAttention").get_by_role("link", name="View full").click()
        expect(inside(page).get_by_text("seq_len = 6 · row-normalised colours")).to_be_visible()
        expect(inside(page).get_by_role("img", name=re.compile(r"^h1: ")).locator(".main-svg").first).to_be_visible()
        shot(page, f"heatmap-js-{size}")
        page.keyboard.press("Escape")
        editor.card("EmbeddingScatter").get_by_role("link", name="Open detailed view").click()
        expect(inside(page).get_by_text("40 points · 100% · 0 hidden")).to_be_visible()
        expect(inside(page).get_by_role("complementary", name="Nearest to view centre").get_by_role("listitem")).to_have_count(40)
        shot(page, f"scatter-js-{size}")
        page.keyboard.press("Escape")
        expect(viewer(page)).to_have_count(0)


def test_the_viewers_say_when_their_run_is_gone(page: Page):
    """The statuses for a run no longer available: the run is deleted behind the page's back,
    then the cards' buttons (still on the page) open viewers that say so."""
    editor = open_and_run(page)
    link = editor.card("EmbeddingScatter").get_by_role("link", name="Open detailed view")
    run_id = re.search(r"run=([0-9a-f-]+)", link.get_attribute("href")).group(1)
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    assert page.request.post(f"/editor/runs/{run_id}/delete", headers={"X-CSRFToken": token}).ok
    link.click()
    expect(inside(page).get_by_role("status")).to_have_text("Cannot load: this run is no longer available.")
    page.keyboard.press("Escape")
    editor.card("AttentionHeatmap").get_by_role("link", name="View full").click()
    expect(inside(page).get_by_role("status")).to_have_text("Cannot fetch: run is no longer available.")
    inside(page).get_by_role("status").click()
    page.keyboard.press("Escape")     # the frame without plotly still closes on Esc
    expect(viewer(page)).to_have_count(0)


def test_the_viewers_without_javascript_are_pages_of_their_own(nojs_page: Page):
    """FV1, FV3, FV4, FV5 without JavaScript: the buttons are links to pages with a large
    picture; the scatter's nearest list, filter form, pan and zoom links, hide/show and Show all."""
    page = nojs_page
    editor = open_and_run(page, js=False)
    for size in SCREENS:
        page.set_viewport_size(SCREENS[size])
        shot(page, f"cards-nojs-{size}")
    editor.card("Edu-MultiHeadAttention").get_by_role("link", name="View full").click()
    expect(page.get_by_text("seq_len = 6 · row-normalised colours")).to_be_visible()
    expect(page.get_by_role("img", name=re.compile(r"^Attention weights, 2 heads"))).to_be_visible()
    for size in SCREENS:
        page.set_viewport_size(SCREENS[size])
        shot(page, f"heatmap-nojs-{size}")
    page.get_by_label("Colormap").select_option("RdBu")
    page.get_by_role("button", name="Show").click()
    expect(page.get_by_label("Colormap")).to_have_value("RdBu")
    page.get_by_role("link", name="← Back to the editor").click()
    editor.card("EmbeddingScatter").get_by_role("link", name="Open detailed view").click()
    side = page.get_by_role("complementary", name="Nearest to view centre")
    rows = side.get_by_role("listitem")
    expect(rows).to_have_count(40)
    expect(page.get_by_text("40 points · 100% · 0 hidden")).to_be_visible()
    for size in SCREENS:
        page.set_viewport_size(SCREENS[size])
        shot(page, f"scatter-nojs-{size}")
    page.get_by_role("link", name="Zoom in").click()
    expect(page.get_by_text("40 points · 140% · 0 hidden")).to_be_visible()
    first = rows.first.get_by_role("link").first.inner_text()
    page.get_by_role("link", name="→ Right").click()
    page.get_by_role("link", name="→ Right").click()
    expect(rows.first.get_by_role("link").first).not_to_have_text(first)
    page.get_by_role("link", name="Reset view").click()
    side.get_by_role("searchbox", name="Filter labels…").fill("#2")
    side.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(11)
    rows.first.get_by_role("link", name="Hide").click()
    expect(page.get_by_text("40 points · 100% · 1 hidden")).to_be_visible()
    side.get_by_role("link", name="Show all").click()
    expect(page.get_by_text("40 points · 100% · 0 hidden")).to_be_visible()
