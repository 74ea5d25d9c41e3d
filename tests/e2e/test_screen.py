"""What a class sees (issue 13 §2): the seed's walkthrough, its seven steps, on a school
laptop's 1366x768 screen and on a 1920x1080 classroom display, with and without JavaScript.
At every step each control the step uses is inside the window (after the pane that holds it
has scrolled it into view) and the page itself never scrolls: only the canvas, the sidebar,
the right-hand column and the bottom panels do, inside themselves.

Screenshots are how the issue is judged: with CODEFYUI_SCREENS=<folder> every step leaves
one there (never committed).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import RUN_TIMEOUT_MS
from tests.e2e.test_inspector import Inspecting, heat_cells

pytestmark = pytest.mark.e2e

SCREENS = os.environ.get("CODEFYUI_SCREENS", "")
CHAIN = ("TensorInput", "Reshape", "Softmax", "Print")
SCREENS_1366 = {"width": 1366, "height": 768}

INSIDE_WINDOW = """e => { const r = e.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && r.left >= 0 && r.top >= 0 && r.right <= innerWidth + 0.5 && r.bottom <= innerHeight + 0.5; }"""
PAGE_SCROLLS = """() => { const d = document.documentElement;
  return {x: scrollX, y: scrollY, width: d.scrollWidth - innerWidth, height: d.scrollHeight - innerHeight}; }"""


class Screen(Inspecting):
    """The editor, checked at every step for what fits the window."""

    def shot(self, name: str) -> None:
        if SCREENS:
            Path(SCREENS).mkdir(parents=True, exist_ok=True)
            size = self.page.viewport_size
            screen = getattr(self.page, "screen_name", f"{size['width']}x{size['height']}-{'js' if self.js else 'nojs'}")
            # caret="initial": hiding the caret injects a style, which the Content-Security-Policy refuses
            self.page.screenshot(path=f"{SCREENS}/{screen}-{name}.png", caret="initial")

    def reachable(self, *controls: Locator) -> None:
        """Each control is shown inside the window, and the page has not scrolled to show it."""
        for control in controls:
            expect(control).to_be_visible()
            control.scroll_into_view_if_needed()
            assert control.evaluate(INSIDE_WINDOW), (control, control.bounding_box(), self.page.viewport_size)
        self.fits()

    def fits(self) -> None:
        scrolls = self.page.evaluate(PAGE_SCROLLS)
        assert scrolls == {"x": 0, "y": 0, "width": 0, "height": 0}, f"the page scrolls: {scrolls}"

    def use(self, control: Locator) -> None:
        """Check a control is reachable, then press it (a form post)."""
        self.reachable(control)
        self.click(control)

    def add(self, type_: str) -> None:
        self.use(self.sidebar.get_by_role("button", name=f"Add {type_}", exact=True))
        expect(self.card(type_)).to_be_visible()

    def select_node(self, label: str) -> Locator:
        title = self.card(label).get_by_role("link", name=label, exact=True)
        self.use(title)
        return self.page.get_by_role("complementary", name=re.compile(rf"^(Node|Inspector) {re.escape(label)}$"))

    def node_tab(self, label: str) -> Locator:
        """The right-hand column on the node's own tab: its name, parameters and wiring."""
        side = self.select_node(label)
        node_tab = side.get_by_role("link", name="Node", exact=True)
        if node_tab.get_attribute("aria-current") != "page":
            self.use(node_tab)
        panel = self.panel(label)
        expect(panel).to_be_visible()
        return panel

    def wire(self, source: str, target: str, port: str) -> None:
        panel = self.node_tab(target)
        row = panel.get_by_role("region", name="Inputs").locator("form").filter(has=self.page.get_by_label(port, exact=True))
        self.reachable(row.get_by_label(port, exact=True))
        row.get_by_label(port, exact=True).select_option(label=f"{source}.tensor")
        self.use(row.get_by_role("button", name="Connect"))

    def settings(self) -> Locator:
        summary = self.page.get_by_role("toolbar", name="Graph").locator("summary").filter(has_text="Settings")  # FALLBACK
        self.reachable(summary)
        summary.click()
        dialog = self.page.get_by_role("dialog", name="Settings")
        expect(dialog).to_be_visible()
        assert dialog.evaluate(INSIDE_WINDOW), dialog.bounding_box()
        return dialog


def test_the_walkthrough_fits_the_screen(screen_page):
    """WK1-WK12 on 1366x768 and 1920x1080, with and without JavaScript: every control each of
    the seven steps uses is inside the window, the page never scrolls, the canvas keeps at
    least half the width with a node selected, and a [1, 16] row is seen whole."""
    page, js = screen_page
    editor = Screen(page, js=js)
    page.goto("/editor/")
    editor.use(page.get_by_role("button", name="New blank graph"))
    editor.fits()
    editor.shot("0-blank")

    # Step 1: TensorInput; choosing value_mode explicit shows its 16-cell grid at once; Random fills it.
    editor.add("TensorInput")
    panel = editor.node_tab("TensorInput")
    mode = panel.get_by_label("Value mode", exact=True)
    editor.reachable(mode)
    mode.select_option("explicit")
    grid = panel.get_by_role("region", name="values")
    cells = grid.get_by_role("textbox", name=re.compile(r"^Cell \d+$"))
    expect(cells).to_have_count(16)
    editor.reachable(*cells.all())
    editor.use(grid.get_by_role("button", name="Random"))
    expect(editor.panel("TensorInput").get_by_label("Value mode", exact=True)).to_have_value("explicit")
    editor.shot("1-tensorinput")

    # Step 2: Reshape -> Softmax -> Print, each placed clear of the others; Reshape's shape 1,16.
    for type_ in CHAIN[1:]:
        editor.add(type_)
    boxes = [editor.card(label).bounding_box() for label in CHAIN]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"] or \
                a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"], ("cards overlap", a, b)
    for source, target in zip(CHAIN, CHAIN[1:]):
        editor.wire(source, target, "value" if target == "Print" else "tensor")
    panel = editor.node_tab("Reshape")
    shape = panel.get_by_label("Shape", exact=True)
    editor.reachable(shape)
    shape.fill("1,16")
    editor.use(panel.get_by_role("button", name="Apply parameters"))
    editor.shot("2-chain")

    # Step 3: a Start, its trigger connected to TensorInput.
    editor.add("Start")
    start = editor.node_tab("Start")
    target = start.get_by_label("Connect trigger to")
    editor.reachable(target)
    target.select_option(label="TensorInput")
    editor.use(start.get_by_role("button", name="Connect trigger"))
    expect(editor.panel("Start").get_by_role("region", name="Starts execution at")).to_contain_text("TensorInput")

    # Step 4: Record node outputs is on, under Settings -> Recording & Inspection; Run.
    settings = editor.settings()
    record = settings.get_by_role("region", name="Recording & Inspection").get_by_role("checkbox", name="Record node outputs")
    editor.reachable(record)
    expect(record).to_be_checked()
    editor.shot("4-settings")
    page.get_by_role("toolbar", name="Graph").locator("summary").filter(has_text="Settings").click()  # FALLBACK
    editor.use(page.get_by_role("toolbar", name="Graph").get_by_role("button", name="Run", exact=True))
    editor.wait_until_run_over(("Start", *CHAIN))
    editor.fits()
    editor.shot("4-run")

    # Step 5: Softmax's Inspector: its [1, 16] rows seen whole, heat shaded; the canvas keeps half the width.
    editor.select_node("Softmax")
    expect(editor.inspector).to_have_accessible_name("Inspector Softmax")
    out = editor.out_row("tensor")
    editor.reachable(*out.get_by_role("cell").all())
    expect(heat_cells(out)).to_have_count(16)
    canvas = page.locator("#canvas-wrap").bounding_box()
    assert canvas["width"] >= page.viewport_size["width"] / 2, canvas
    editor.shot("5-softmax")
    editor.select_node("Reshape")
    expect(editor.divider).to_have_text("[1, 4, 4] → [1, 16]")
    editor.reachable(editor.divider)
    editor.shot("5-reshape")

    # Step 6: Compare segment (Settings -> Recording & Inspection): a HEAD/TAIL bubble.
    settings = editor.settings()
    compare = settings.get_by_role("form", name="Compare segment")
    editor.reachable(compare.get_by_label("First node"), compare.get_by_label("Second node"))
    compare.get_by_label("First node").select_option(label="Reshape")
    compare.get_by_label("Second node").select_option(label="Print")
    editor.use(compare.get_by_role("button", name="Create segment"))
    segment = page.get_by_role("complementary", name="Inspector SEGMENT Reshape → Print", exact=True)
    editor.reachable(segment.get_by_role("heading", name=re.compile(r"^Segment outputs")))
    editor.reachable(editor.canvas.get_by_text("HEAD", exact=True), editor.canvas.get_by_text("TAIL", exact=True))
    editor.shot("6-segment")

    # Step 7: Record node outputs off, before a heavy training run.
    settings = editor.settings()
    recording = settings.get_by_role("region", name="Recording & Inspection")
    record = recording.get_by_role("checkbox", name="Record node outputs")
    editor.reachable(record)
    record.uncheck()
    editor.use(recording.get_by_role("button", name="Apply"))
    settings = editor.settings()
    expect(settings.get_by_role("checkbox", name="Record node outputs")).not_to_be_checked()
    editor.shot("7-record-off")
    expect(page.get_by_role("alert")).to_have_count(0)


def test_a_failed_run_never_moves_the_toolbar(screen_page):
    """Item 1: after the walkthrough's own failing run (Reshape's default -1,784) the long
    status never moves a toolbar button, and Settings opens inside the window with Record
    node outputs reachable, and This Server's line on the runs and run workers."""
    page, js = screen_page
    editor = Screen(page, js=js)
    editor.open_example()
    editor.node_tab("Reshape")
    shape = editor.panel("Reshape").get_by_label("Shape", exact=True)
    shape.fill("-1,784")
    editor.use(editor.panel("Reshape").get_by_role("button", name="Apply parameters"))
    toolbar = page.get_by_role("toolbar", name="Graph")
    buttons = ("Undo", "Auto layout", "Run", "Close tab")
    before = [toolbar.get_by_role("button", name=b, exact=True).bounding_box() for b in buttons]
    editor.use(toolbar.get_by_role("button", name="Run", exact=True))
    expect(editor.run_status()).to_contain_text("Run failed", timeout=RUN_TIMEOUT_MS)
    if not js:
        expect(page.locator('meta[http-equiv="refresh"]')).to_have_count(0, timeout=RUN_TIMEOUT_MS)
    else:
        page.wait_for_function(f"() => {editor.SETTLED}")
    after = [toolbar.get_by_role("button", name=b, exact=True).bounding_box() for b in buttons]
    assert before == after, (before, after)
    settings = editor.settings()
    editor.reachable(settings.get_by_role("checkbox", name="Record node outputs"))
    editor.shot("failed-run-settings")
    server = settings.get_by_role("region", name="This Server")   # how busy the run workers are, whole
    runs = server.get_by_role("listitem").filter(has_text=re.compile(r"^Runs: \d+ computing, \d+ paused for others, "))
    editor.reachable(runs, server.get_by_role("link", name="Refresh"))
    editor.shot("this-server")
    toolbar.locator("summary").filter(has_text="Settings").click()  # FALLBACK: a <summary> has no role
    for name, inside in (("File", "Import"), ("Select", "Create segment")):
        toolbar.locator("summary").filter(has_text=name).click()
        body = toolbar.locator("details[open] .popover-body")  # FALLBACK: the open popover's body
        editor.reachable(body, body.get_by_role("button", name=inside, exact=True))
        toolbar.locator("summary").filter(has_text=name).click()


def test_double_click_anywhere_on_a_card_opens_node_details(page: Page):
    """Item 2, ND1: double-clicking a node's title (which also selects it and re-renders the
    editor) opens Node details and throws nothing; so does its body."""
    editor = Screen(page, js=True)
    editor.open_example()
    editor.card("Reshape").get_by_role("link", name="Reshape", exact=True).dblclick()
    editor.expect_details_of("Reshape")
    editor.close_details()
    editor.card("Softmax").dblclick(position=editor.card_body("Softmax"))
    editor.expect_details_of("Softmax")
    editor.shot("details")


def test_shift_click_selects_nodes_and_never_text(page: Page):
    """Item 9: Shift-clicking two cards selects them, not the text between them."""
    editor = Screen(page, js=True)
    editor.open_example()
    for label in ("Reshape", "Print"):
        editor.card(label).click(modifiers=["Shift"], position=editor.card_body(label))
    expect(page.locator("#segment-form")).to_be_visible()  # FALLBACK: the floating form has no name
    assert page.evaluate("() => getSelection().toString()") == ""


def test_without_javascript_a_node_moves_by_its_arrow_buttons(nojs_page: Page):
    """Item 4: without a script a node is moved with its panel's Move buttons, by grid steps."""
    editor = Screen(nojs_page, js=False)
    editor.open_example()
    before = editor.card_position("Print")
    panel = editor.node_tab("Print")
    editor.use(panel.get_by_role("group", name="Move Print").get_by_role("button", name="Move right"))
    editor.use(editor.panel("Print").get_by_role("group", name="Move Print").get_by_role("button", name="Move down"))
    after = editor.card_position("Print")
    assert (round(after[0] - before[0]), round(after[1] - before[1])) == (48, 48), (before, after)


def test_an_edge_is_reached_by_keyboard_from_the_connections_list(page: Page):
    """Item 14, ND11: after a run the selected node lists its connections; Enter on What flowed
    opens the edge summary, whose View stats is the next keyboard stop."""
    editor = Screen(page, js=True)
    editor.open_example()
    editor.run_to_the_end()
    panel = editor.node_tab("Softmax")
    link = panel.get_by_role("region", name="Connections").get_by_role(
        "link", name="What flowed through Reshape.tensor → Softmax.tensor", exact=True)
    link.focus()
    page.keyboard.press("Enter")
    summary = page.get_by_role("dialog", name="Reshape → Softmax (tensor)")
    expect(summary).to_be_visible()
    editor.reachable(summary)
    expect(summary).to_contain_text("[1, 16]")
    expect(summary.get_by_role("link", name="View stats")).to_be_focused()


def test_the_home_page_is_one_click_from_a_lesson(nojs_page: Page):
    """Item 12: the first page after login offers the blank graph and the lessons."""
    editor = Screen(nojs_page, js=False)
    nojs_page.goto("/")
    editor.shot("home")
    # The home page is a document (every topic's lessons, the graphs and runs tables): it may
    # scroll, but the first lesson is in the window as it opens, one click away.
    lesson = nojs_page.get_by_role("button", name=re.compile(r"^Softmax walkthrough"))
    expect(lesson).to_be_visible()
    assert lesson.evaluate(INSIDE_WINDOW), lesson.bounding_box()
    editor.click(lesson)
    expect(editor.card("Reshape")).to_be_visible()


def test_a_school_laptop_sees_several_runs_at_once(nojs_page: Page):
    """The Runs panel keeps a run to one line: on 1366x768 three runs are seen whole, each
    with its Inspect and Delete buttons inside the window, without scrolling the panel."""
    page = nojs_page
    page.set_viewport_size(SCREENS_1366)
    editor = Screen(page, js=False)
    editor.open_example()
    run = page.get_by_role("toolbar", name="Graph").get_by_role("button", name="Run", exact=True)
    for _ in range(3):
        editor.use(run)
        editor.wait_until_run_over(())   # served from cache after the first: no badge reads Completed
    page.locator("summary").filter(has_text="Runs").click()  # FALLBACK: a <summary> has no role
    rows = page.get_by_role("table").filter(has=page.get_by_role("columnheader", name="Duration")).get_by_role("row")
    expect(rows).to_have_count(4)   # the header and three runs
    for row in rows.all()[1:]:
        for button in (row.get_by_role("button", name="Inspect"), row.get_by_role("button", name=re.compile("^Delete run"))):
            assert button.evaluate(INSIDE_WINDOW), (button.bounding_box(), page.viewport_size)
    editor.fits()
    editor.shot("runs")


def test_the_runs_panel_shows_its_rows_when_opened(screen_page):
    """Each action re-renders the editor; under htmx the closed Runs panel comes without its
    rows and fetches them when opened (without JavaScript every page has them): they show
    inside the window at both sizes, and their buttons work."""
    page, js = screen_page
    editor = Screen(page, js=js)
    editor.open_example()
    run = page.get_by_role("toolbar", name="Graph").get_by_role("button", name="Run", exact=True)
    for _ in range(2):
        editor.use(run)
        editor.wait_until_run_over(())
    expect(page.locator("#runs-body[hx-get]")).to_have_count(1 if js else 0)   # under htmx: not fetched yet
    page.locator("summary").filter(has_text="Runs").click()  # FALLBACK: a <summary> has no role
    rows = page.get_by_role("table").filter(has=page.get_by_role("columnheader", name="Duration")).get_by_role("row")
    expect(rows).to_have_count(3)   # the header and two runs
    editor.reachable(rows.nth(2).get_by_role("button", name="Inspect"))
    editor.shot("runs-opened")
    first = rows.nth(2).get_by_role("cell").first.inner_text().split()[0]   # the older run's short id
    editor.use(rows.nth(2).get_by_role("button", name="Inspect"))
    if js:
        page.wait_for_function(f"() => {editor.SETTLED}")
    state = page.locator("#editor").get_attribute("data-state")
    assert f"run={first}" in state, (first, state)   # the Inspector reads that run now
