"""Cards sit where their document says and move where a student drags them, with no style
attribute anywhere (the Content-Security-Policy refuses inline styles: any refusal fails the
test, see conftest.py): positions come from placement classes, and what the script moves
(a dragged card, the zoom) lives in a stylesheet of its own."""
from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.test_inspector import Inspecting
from tests.e2e.test_walkthrough import assert_near


def test_a_dragged_card_stays_where_it_is_dropped_and_zoom_survives_an_edit(page: Page):
    editor = Inspecting(page, js=True)
    editor.open_example()
    before = editor.card_position("Softmax")
    assert_near(before, (744, 120), slack=1)  # the example's position, from the placement classes
    header = editor.card("Softmax").locator("header")
    box = header.bounding_box()
    start = (box["x"] + 20, box["y"] + box["height"] / 2)

    def drag():
        page.mouse.move(*start)
        page.mouse.down()
        page.mouse.move(start[0] + 60, start[1] + 150, steps=8)
        page.mouse.up()
    editor.submit(drag)
    assert_near(editor.card_position("Softmax"), (before[0] + 60, before[1] + 150), slack=2)
    page.reload()
    assert_near(editor.card_position("Softmax"), (before[0] + 60, before[1] + 150), slack=2)

    scale = "() => { const c = document.getElementById('canvas'); return c.getBoundingClientRect().width / c.offsetWidth; }"
    page.locator("#canvas-wrap").hover()
    page.keyboard.down("Control")
    page.mouse.wheel(0, -200)
    page.keyboard.up("Control")
    zoom = page.evaluate(scale)
    assert zoom > 1.2 and page.locator("#canvas").get_attribute("style") is None
    editor.click(editor.page.get_by_role("button", name="Auto layout"))  # an edit: #editor is swapped
    assert abs(page.evaluate(scale) - zoom) < 0.01
