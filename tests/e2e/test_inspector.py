"""The Teaching Inspector and Node details in a real Chromium against a live server (issue 4):
the seed's walkthrough step 5, the rows' messages during a held run, the panel's tabs and
collapsed strip, Node details' three ways in and its keyboard, the edge summary, and the same
values without JavaScript.

Things are found by role and accessible name wherever the page allows it; the few fallback
locators (marked FALLBACK) stand in for names the templates lack.
"""
from __future__ import annotations

import re
import time

import pytest
import torch
from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import RUN_TIMEOUT_MS
from tests.e2e.test_walkthrough import VALUES, Editor, _import_gated

pytestmark = pytest.mark.e2e

EXAMPLE = re.compile(r"^Softmax walkthrough")
NODES = ("Start", "TensorInput", "Reshape", "Softmax", "Print")
GATED = ("Start", "TensorInput", "Gate", "Reshape", "Softmax", "Print")
NOTHING = "Nothing captured yet"
WAITING = "Waiting for this node to run…"
RUNNING = "Node is running…"
# The Stats tab's rows, in whatever case and layout the Stats issue settles on.
ZERO_FRACTION = re.compile(r"^zero fraction$", re.IGNORECASE)
COUNT_16 = re.compile(r"^count 16\b", re.IGNORECASE)


def fmt(v: float) -> str:
    """How the Inspector writes a float32 value of this size (reference §7: 4 decimals)."""
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.2e}" if abs(v) < 1e-3 else f"{v:.4f}".rstrip("0").rstrip(".")


def softmax_cells() -> list[str]:
    return [fmt(v) for v in torch.tensor(VALUES, dtype=torch.float32).reshape(1, 16).softmax(-1)[0].tolist()]


def stats_line(values: list[float]) -> str:
    t = torch.tensor(values, dtype=torch.float32)
    mean = t.sum(dtype=torch.float64).item() / t.numel()
    return f"min {fmt(t.min().item())} · max {fmt(t.max().item())} · mean {fmt(mean)}"


class Inspecting(Editor):
    """The editor plus what the Inspector, Node details and the edge summary offer."""

    # htmx gives new content its hx- behaviour only once it has settled (20 ms after the
    # swap): a link clicked before that is followed as a plain link. So a wait ends when the
    # new element is there, no request is in flight and nothing is swapping or settling.
    SETTLED = "!document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"

    # -- getting somewhere ---------------------------------------------------------------------
    def open_example(self) -> None:
        """The welcome screen's "Softmax walkthrough" lesson example."""
        self.page.goto("/editor/")
        expect(self.page.get_by_role("heading", name="Build your first deep learning model")).to_be_visible()
        self.click(self.page.get_by_role("button", name=EXAMPLE))
        expect(self.card("Reshape")).to_be_visible()

    def run_to_the_end(self, labels=NODES) -> None:
        """Run, and wait until the page shows every node Completed and the run succeeded."""
        self.run()
        self.wait_until_run_over(labels)

    def wait_until_run_over(self, labels) -> None:
        """The run is over as the page shows it. With JavaScript the script re-renders the
        editor once the pushed run status says so; that GET starts in the same task that swaps
        the status in, so once nothing is in flight a click made next cannot be undone by it.
        Without JavaScript the page stops refreshing itself."""
        self.expect_all_completed(labels)
        expect(self.run_status()).to_contain_text("Run succeeded", timeout=RUN_TIMEOUT_MS)
        if self.js:
            self.page.wait_for_function(f"() => {self.SETTLED}")
        else:
            expect(self.page.locator('meta[http-equiv="refresh"]')).to_have_count(0, timeout=RUN_TIMEOUT_MS)

    def submit(self, action, *args, **kwargs) -> None:
        super().submit(action, *args, **kwargs)
        if self.js:
            self.page.wait_for_function(f"() => {self.SETTLED}")

    def swapped(self, selector: str, action, *args, **kwargs) -> None:
        """Do something that makes htmx replace `selector` (not the whole editor), and wait
        for the new one, settled."""
        self.page.evaluate("s => document.querySelector(s).dataset.e2eStale = '1'", selector)
        action(*args, **kwargs)
        self.page.wait_for_function(
            f"s => {{ const e = document.querySelector(s); return e && !e.dataset.e2eStale && {self.SETTLED}; }}",
            arg=selector)

    # -- the Inspector -------------------------------------------------------------------------
    @property
    def inspector(self) -> Locator:
        return self.page.get_by_role("complementary", name=re.compile(r"^Inspector\b"))

    def inspect(self, label: str) -> Locator:
        """Click the node's title: the right-hand column shows its Inspector (Forward, unless
        the column is on another of the Inspector's tabs)."""
        self.click(self.card(label).get_by_role("link", name=label, exact=True))
        if not self.inspector.count():  # before a run the column opens on the node's own tab
            self.click(self.page.get_by_role("link", name="Forward", exact=True))
        expect(self.inspector).to_be_visible()
        return self.inspector

    def inspector_tab(self, name: str) -> Locator:
        return self.inspector.get_by_role("navigation", name="Inspector tabs").get_by_role("link", name=name, exact=True)

    def show_tab(self, name: str) -> None:
        """An Inspector tab: with JavaScript only the Inspector column is swapped."""
        if self.js:
            self.swapped(".inspector", self.inspector_tab(name).click)
        else:
            self.click(self.inspector_tab(name))
        expect(self.inspector_tab(name)).to_have_attribute("aria-current", "page")

    def inputs(self) -> Locator:
        return self.inspector.get_by_role("region", name="Inputs", exact=True)

    def outputs(self) -> Locator:
        return self.inspector.get_by_role("region", name="Outputs", exact=True)

    def in_row(self, label: str) -> Locator:
        return self.inspector.get_by_role("article", name=f"Input {label}", exact=True)

    def out_row(self, port: str) -> Locator:
        return self.inspector.get_by_role("article", name=f"Output {port}", exact=True)

    @property
    def divider(self) -> Locator:
        return self.inspector.locator(".flow-divider")

    # -- Node details --------------------------------------------------------------------------
    @property
    def details(self) -> Locator:
        return self.page.get_by_role("dialog", name="Node details")

    def expect_details_of(self, label: str) -> Locator:
        """The dialog is open on this node: its name button says so."""
        expect(self.details).to_be_visible()
        expect(self.details.get_by_role("button", name=f"Rename {label}", exact=True)).to_be_visible()
        self.page.wait_for_function(f"() => {self.SETTLED}")
        return self.details

    def step(self, key: str, label: str) -> None:
        """ArrowLeft / ArrowRight in Node details: the dialog shows that node, still open."""
        self.swapped("#details", self.page.keyboard.press, key)
        self.expect_details_of(label)

    def details_tab(self, name: str) -> Locator:
        return self.details.get_by_role("navigation", name="Node details tabs").get_by_role("link", name=name, exact=True)

    def show_details_tab(self, name: str) -> None:
        self.swapped("#details", self.details_tab(name).click)
        expect(self.details_tab(name)).to_have_attribute("aria-current", "page")

    def close_details(self) -> None:
        """Esc closes the dialog; closing re-renders the editor (a rename shows on its card)."""
        self.submit(self.page.keyboard.press, "Escape")
        expect(self.details).to_be_hidden()

    def card_body(self, label: str) -> dict:
        """A point on the card below its title bar and clear of its port buttons."""
        box = self.card(label).bounding_box()
        return {"x": box["width"] / 2, "y": box["height"] - 4}


DUPLICATE_IDS = """() => { const seen = {}; document.querySelectorAll('[id]').forEach(e => seen[e.id] = (seen[e.id] || 0) + 1);
                             return Object.keys(seen).filter(id => seen[id] > 1); }"""


def heat_cells(row: Locator) -> Locator:
    """Heat-coloured cells: each carries the title "changed" (and a background)."""
    return row.get_by_role("cell").and_(row.get_by_title("changed", exact=True))


def backgrounds(cells: Locator) -> list[str]:
    return cells.evaluate_all("cs => cs.map(c => getComputedStyle(c).backgroundColor)")


def assert_stacked(upper: Locator, lower: Locator) -> None:
    a, b = upper.bounding_box(), lower.bounding_box()
    assert a["y"] + a["height"] <= b["y"] + 1, (a, b)


# -- WK8-WK10: step 5 ---------------------------------------------------------------------------

def expect_softmax_step_5(editor: Inspecting) -> None:
    """Softmax: Reshape.tensor above tensor, both [1, 16], the output heat-coloured."""
    expect(editor.inspector).to_have_accessible_name("Inspector Softmax")
    expect(editor.inputs().get_by_role("heading", name="Inputs (1)", exact=True)).to_be_visible()
    expect(editor.outputs().get_by_role("heading", name="Outputs (1)", exact=True)).to_be_visible()
    assert_stacked(editor.inputs(), editor.outputs())

    source, out = editor.in_row("Reshape.tensor"), editor.out_row("tensor")
    expect(source).to_contain_text(f"shape [1, 16] · float32 · {stats_line(VALUES)}")
    expect(source.get_by_role("cell")).to_have_text([fmt(v) for v in VALUES])
    probabilities = torch.tensor(VALUES).reshape(1, 16).softmax(-1)[0].tolist()
    expect(out).to_contain_text(f"shape [1, 16] · float32 · {stats_line(probabilities)}")
    expect(out.get_by_role("cell")).to_have_text(softmax_cells())
    # WK9: every cell changed; each is shaded (a background colour, not transparent) ...
    expect(heat_cells(out)).to_have_count(16)
    assert all(c not in ("", "rgba(0, 0, 0, 0)", "transparent") for c in backgrounds(heat_cells(out))), \
        backgrounds(heat_cells(out))
    expect(out).to_contain_text("Shaded cells changed from the input")
    # ... only on the output, and the divider shows no shape change.
    expect(heat_cells(source)).to_have_count(0)
    expect(editor.divider).not_to_contain_text("→")


def expect_reshape_step_5(editor: Inspecting) -> None:
    """Reshape: the divider shows [1, 4, 4] → [1, 16]; nothing is heat-coloured."""
    expect(editor.inspector).to_have_accessible_name("Inspector Reshape")
    expect(editor.divider).to_have_text("[1, 4, 4] → [1, 16]")
    source, out = editor.in_row("TensorInput.tensor"), editor.out_row("tensor")
    expect(source).to_contain_text("shape [1, 4, 4] · float32")
    expect(source.get_by_role("cell")).to_have_count(16)             # the 4×4 slice of dim 0
    expect(out).to_contain_text("shape [1, 16] · float32")
    expect(out.get_by_role("cell")).to_have_text([fmt(v) for v in VALUES])
    expect(editor.inspector.get_by_title("changed", exact=True)).to_have_count(0)
    expect(editor.inspector).not_to_contain_text("Shaded cells changed")
    assert_stacked(editor.inputs(), editor.divider)
    assert_stacked(editor.divider, editor.outputs())


def test_step_5_softmax_heat_and_reshape_divider(page: Page):
    """WK8, WK9, WK10, IN1, IN3, IN4: the walkthrough example from the welcome screen, run to
    the end; clicking Softmax opens the Inspector with Inputs (1) above Outputs (1), shape,
    dtype, min/max/mean and the values, type-coloured dots, and heat-coloured output cells;
    clicking Reshape shows [1, 4, 4] → [1, 16] on the divider and no heat."""
    editor = Inspecting(page, js=True)
    editor.open_example()
    expect(editor.inspector).to_have_count(0)           # IN1: no column until a node is selected
    editor.run_to_the_end()

    editor.inspect("Softmax")
    expect_softmax_step_5(editor)
    # IN3: each port's dot is in its type's colour (TENSOR: #4CAF50) and says the type.
    for row in (editor.in_row("Reshape.tensor"), editor.out_row("tensor")):
        dot = row.get_by_title("TENSOR", exact=True)
        expect(dot).to_have_css("background-color", "rgb(76, 175, 80)")

    editor.inspect("Reshape")
    expect_reshape_step_5(editor)


def test_steps_and_backward_tabs_show_their_empty_states(page: Page):
    """IN2, IN5, IN6, IN7: a selected node has the tabs Forward, Steps and Backward; before a
    run Steps reads Nothing captured yet; after a run without Verbose internals or Capture
    gradients, Steps reads "This node does not record steps" and Backward "No gradients
    captured"; switching tabs keeps the tab's run (Forward shows the values again)."""
    editor = Inspecting(page, js=True)
    editor.open_example()
    editor.inspect("Softmax")
    tabs = editor.inspector.get_by_role("navigation", name="Inspector tabs").get_by_role("link")
    expect(tabs).to_have_text(["Forward", "Steps", "Backward"])
    expect(editor.inspector_tab("Forward")).to_have_attribute("aria-current", "page")
    editor.show_tab("Steps")
    expect(editor.inspector.get_by_role("status")).to_have_text(NOTHING)

    editor.run_to_the_end()
    editor.inspect("Softmax")
    editor.show_tab("Steps")
    expect(editor.inspector).to_contain_text("This node does not record steps")
    expect(editor.inspector).to_contain_text("Enable Verbose internals")
    editor.show_tab("Backward")
    expect(editor.inspector).to_contain_text("No gradients captured")
    expect(editor.inspector).to_contain_text("Enable Capture gradients")
    expect(editor.inspector_tab("Steps")).not_to_have_attribute("aria-current", "page")
    editor.show_tab("Forward")
    expect(heat_cells(editor.out_row("tensor"))).to_have_count(16)


def test_inspector_collapses_to_a_strip_and_keeps_its_run(page: Page):
    """IN23: the › button ("Collapse inspector") folds the Inspector into a thin strip;
    "Expand inspector" opens it again on the same run, its values still shown."""
    editor = Inspecting(page, js=True)
    editor.open_example()
    editor.run_to_the_end()
    editor.inspect("Softmax")
    wide = editor.inspector.bounding_box()["width"]

    editor.click(editor.inspector.get_by_role("link", name="Collapse inspector", exact=True))
    strip = page.get_by_role("complementary", name="Inspector", exact=True)
    expect(strip).to_be_visible()
    expect(strip.get_by_role("link", name="Expand inspector", exact=True)).to_be_visible()
    expect(strip.get_by_role("table")).to_have_count(0)
    assert strip.bounding_box()["width"] < 60 < wide, (strip.bounding_box(), wide)
    expect(editor.card("Softmax")).to_have_class(re.compile(r"\bselected\b"))  # the node stays selected

    editor.click(strip.get_by_role("link", name="Expand inspector", exact=True))
    expect(editor.inspector).to_have_accessible_name("Inspector Softmax")
    assert abs(editor.inspector.bounding_box()["width"] - wide) < 1
    expect_softmax_step_5(editor)


def test_rows_read_nothing_captured_then_wait_during_a_held_run(page: Page, web_server):
    """IN7, IN8: before the first run the rows read Nothing captured yet; while a run is held
    at a test:Gate before Reshape, Reshape's input (from the Gate) reads Node is running… and
    its output Waiting for this node to run…, and Softmax's rows read Waiting…; once the run
    is over the values are there, and after a reload the rows read Nothing captured yet."""
    editor = Inspecting(page, js=True)
    token = f"inspector-{time.monotonic_ns()}"
    _import_gated(editor, token)

    editor.inspect("Reshape")
    expect(editor.in_row("Gate.tensor").get_by_role("status")).to_have_text(NOTHING)
    expect(editor.out_row("tensor").get_by_role("status")).to_have_text(NOTHING)

    editor.run()
    expect(editor.badge("Gate")).to_have_text("Running…", timeout=RUN_TIMEOUT_MS)
    editor.inspect("Reshape")        # selected again while the run is held
    expect(editor.in_row("Gate.tensor").get_by_role("status")).to_have_text(RUNNING)
    expect(editor.out_row("tensor").get_by_role("status")).to_have_text(WAITING)
    editor.inspect("Softmax")
    expect(editor.in_row("Reshape.tensor").get_by_role("status")).to_have_text(WAITING)
    expect(editor.out_row("tensor").get_by_role("status")).to_have_text(WAITING)

    (web_server.var_dir / f"e2e-gate-{token}").touch()
    editor.wait_until_run_over(GATED)
    editor.inspect("Softmax")
    expect(editor.in_row("Reshape.tensor").get_by_role("cell")).to_have_text([fmt(v) for v in VALUES])
    expect(editor.out_row("tensor").get_by_role("cell")).to_have_text(softmax_cells())

    # IN7: a reload starts without a run to read.
    page.reload()
    expect(editor.inspector).to_have_accessible_name("Inspector Softmax")
    expect(editor.in_row("Reshape.tensor").get_by_role("status")).to_have_text(NOTHING)
    expect(editor.out_row("tensor").get_by_role("status")).to_have_text(NOTHING)


def test_waiting_rows_fill_in_by_themselves(page: Page, web_server):
    """IN8: rows that wait for their node fill in by themselves when it finishes — no reload,
    no click — while the page stays the one that showed them waiting."""
    editor = Inspecting(page, js=True)
    token = f"fill-{time.monotonic_ns()}"
    _import_gated(editor, token)
    editor.run()
    expect(editor.badge("Gate")).to_have_text("Running…", timeout=RUN_TIMEOUT_MS)

    frames: list[str] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(str(payload))))
    editor.inspect("Softmax")
    expect(editor.in_row("Reshape.tensor").get_by_role("status")).to_have_text(WAITING)
    deadline = time.monotonic() + 10            # the new page's socket has caught up
    while not frames and time.monotonic() < deadline:
        page.wait_for_timeout(20)
    assert frames, "the page did not connect to the run's socket"

    page.evaluate("window.e2eSamePage = true")
    (web_server.var_dir / f"e2e-gate-{token}").touch()
    expect(editor.badge("Print")).to_have_text("Completed", timeout=RUN_TIMEOUT_MS)
    expect(editor.in_row("Reshape.tensor").get_by_role("cell")).to_have_text(
        [fmt(v) for v in VALUES], timeout=5_000)
    expect(editor.out_row("tensor").get_by_role("cell")).to_have_text(softmax_cells(), timeout=5_000)
    expect(editor.inspector.get_by_role("status")).to_have_count(0)
    assert page.evaluate("window.e2eSamePage === true"), "the page was loaded again"


# -- Node details ---------------------------------------------------------------------------

def test_node_details_opens_three_ways_and_steps_with_the_arrow_keys(page: Page):
    """ND1, ND2, ND9: Node details opens by double-clicking a node, by pressing Enter with it
    selected and by right-click → Open details; it is a modal with the parameter form on the
    left and the Inspector's tabs on the right; ArrowRight / ArrowLeft step to the next /
    previous node on the canvas (left to right) without closing; Esc closes."""
    editor = Inspecting(page, js=True)
    editor.open_example()

    # Double-click the card (below its title bar).
    editor.card("Reshape").dblclick(position=editor.card_body("Reshape"))
    details = editor.expect_details_of("Reshape")
    params = details.get_by_role("region", name="Parameters", exact=True)
    knows = details.get_by_role("region", name="What the Inspector knows", exact=True)
    expect(params.get_by_role("textbox", name="Shape", exact=True)).to_have_value("1,16")
    expect(params.get_by_role("textbox", name="Shape", exact=True)).to_have_accessible_description(re.compile("^New sizes"))
    assert page.evaluate(DUPLICATE_IDS) == [], "a label or link on the page would find the wrong element"
    expect(knows.get_by_role("navigation", name="Node details tabs").get_by_role("link")).to_have_text(
        ["Inputs", "Outputs", "Stats", "Docs"])
    assert params.bounding_box()["x"] + params.bounding_box()["width"] <= knows.bounding_box()["x"]
    assert details.evaluate("d => d.open && d.matches(':modal')")

    editor.step("ArrowRight", "Softmax")
    editor.step("ArrowRight", "Print")
    page.keyboard.press("ArrowRight")              # Print is the last node: it stays
    editor.expect_details_of("Print")
    expect(details.get_by_role("link", name="Next node →")).to_have_count(0)
    editor.step("ArrowLeft", "Softmax")
    expect(details.get_by_label("Dim", exact=True)).to_have_value("-1")
    editor.close_details()

    # Enter with the node selected.
    editor.select("Print")
    page.keyboard.press("Enter")
    editor.expect_details_of("Print")
    editor.step("ArrowLeft", "Softmax")
    editor.close_details()

    # Right-click → Open details.
    editor.card("TensorInput").click(button="right", position=editor.card_body("TensorInput"))
    page.get_by_role("menuitem", name="Open details", exact=True).click()
    editor.expect_details_of("TensorInput")
    expect(page.get_by_role("menuitem", name="Open details", exact=True)).to_be_hidden()
    editor.step("ArrowLeft", "Start")
    editor.close_details()


def test_node_details_rename_applies_with_enter_and_cancels_with_escape(page: Page):
    """ND10: clicking the node name in Node details turns it into a rename field; Enter
    applies (the card shows the new name once the dialog is closed), Esc cancels."""
    editor = Inspecting(page, js=True)
    editor.open_example()
    editor.card("Softmax").dblclick(position=editor.card_body("Softmax"))
    details = editor.expect_details_of("Softmax")
    field = details.get_by_role("textbox", name="Node name", exact=True)
    expect(field).to_be_hidden()

    details.get_by_role("button", name="Rename Softmax", exact=True).click()
    expect(field).to_be_visible()
    expect(field).to_be_focused()
    field.fill("Probabilities")
    editor.swapped("#details", field.press, "Enter")
    editor.expect_details_of("Probabilities")
    expect(field).to_be_hidden()
    editor.close_details()
    expect(editor.card("Probabilities")).to_be_visible()
    expect(editor.card("Softmax")).to_have_count(0)

    editor.card("Probabilities").dblclick(position=editor.card_body("Probabilities"))
    details = editor.expect_details_of("Probabilities")
    details.get_by_role("button", name="Rename Probabilities", exact=True).click()
    field.fill("Not this")
    field.press("Escape")
    expect(field).to_be_hidden()
    name = details.get_by_role("button", name="Rename Probabilities", exact=True)
    expect(name).to_be_focused()                       # back where the rename began
    name.press("Enter")
    expect(field).to_have_value("Probabilities")       # what was typed was dropped
    field.press("Escape")
    expect(name).to_be_focused()
    editor.expect_details_of("Probabilities")          # still open, name unchanged
    editor.close_details()
    expect(editor.card("Probabilities")).to_be_visible()
    expect(editor.card("Not this")).to_have_count(0)


def expect_details_panes(editor: Inspecting, where: Locator) -> None:
    """ND5, ND7, ND8 on Softmax after a run: Outputs, Stats and Docs through the tab links."""
    editor.show_details_tab("Outputs")
    out = where.get_by_role("article", name="Output tensor", exact=True)
    expect(out).to_contain_text("shape [1, 16] · float32")
    expect(out.get_by_role("cell")).to_have_text(softmax_cells())
    expect(heat_cells(out)).to_have_count(16)

    editor.show_details_tab("Stats")
    for name in ("Reshape.tensor", "tensor"):
        stats = where.get_by_role("article", name=f"Statistics of {name}", exact=True)
        expect(stats.get_by_role("rowheader", name=ZERO_FRACTION)).to_be_visible()
        expect(stats.get_by_role("row", name=COUNT_16)).to_be_visible()

    editor.show_details_tab("Docs")
    expect(where).to_contain_text("Turns scores into probabilities")
    docs = where.get_by_role("table")
    expect(docs.get_by_role("columnheader")).to_have_text(["Name", "Type", "Default", "Range", "Options"])
    expect(docs.get_by_role("row", name=re.compile(r"^dim\b"))).to_contain_text("-1")
    expect(where.get_by_role("heading", name="Ports", exact=True)).to_be_visible()
    expect(where.get_by_role("listitem")).to_have_text(["input tensor · TENSOR", "output tensor · TENSOR"])

    editor.show_details_tab("Backward")
    expect(where).to_contain_text("No gradients captured")


class DetailsPage(Inspecting):
    """Node details as a page of its own (its address opened directly), JavaScript on: the
    tab links swap #details in place."""

    @property
    def details(self) -> Locator:
        return self.page.get_by_role("main")

    def expect_details_of(self, label: str) -> Locator:
        expect(self.details.get_by_role("textbox", name="Node name", exact=True)).to_have_value(label)
        return self.details


def test_node_details_outputs_stats_and_docs(page: Page):
    """ND5, ND6, ND7, ND8, IN16: after a run, Node details of Softmax — opened from the node
    panel's Open details link, in the dialog — starts on Inputs with the captured values as
    the Forward tab shows them and offers Steps / Backward once there is a run; at that
    link's address, its Outputs tab shows the values with heat, Stats every port's summary
    with its zero fraction, Docs the description, the params (type, default, range, options)
    and the ports, and Backward its empty state."""
    editor = Inspecting(page, js=True)
    editor.open_example()
    editor.run_to_the_end()
    panel = editor.select("Softmax")
    link = panel.get_by_role("link", name="Open details", exact=True)
    address = link.get_attribute("href")
    link.click()
    details = editor.expect_details_of("Softmax")
    expect(details.get_by_role("navigation", name="Node details tabs").get_by_role("link")).to_have_text(
        ["Inputs", "Outputs", "Steps", "Backward", "Stats", "Docs"])
    expect(editor.details_tab("Inputs")).to_have_attribute("aria-current", "page")
    source = details.get_by_role("article", name="Input Reshape.tensor", exact=True)
    expect(source).to_contain_text(f"shape [1, 16] · float32 · {stats_line(VALUES)}")
    expect(source.get_by_role("cell")).to_have_text([fmt(v) for v in VALUES])
    editor.close_details()

    page.goto(address)
    as_page = DetailsPage(page, js=True)
    as_page.expect_details_of("Softmax")
    expect_details_panes(as_page, as_page.details)


def test_node_details_dialog_tabs_switch_in_place(page: Page):
    """ND5, ND7, ND8 in the dialog: its tab links show Outputs, Stats and Docs in place."""
    editor = Inspecting(page, js=True)
    editor.open_example()
    editor.run_to_the_end()
    editor.select("Softmax").get_by_role("link", name="Open details", exact=True).click()
    details = editor.expect_details_of("Softmax")
    editor.details_tab("Outputs").click()
    expect(details.get_by_role("article", name="Output tensor", exact=True)).to_be_visible(timeout=5_000)
    expect(details.get_by_role("toolbar", name="Graph")).to_have_count(0)   # not the editor inside it
    expect_details_panes(editor, details)


def edge_point(page: Page, edge_id: str) -> dict:
    """The middle of an edge's path, in page coordinates (FALLBACK: edges are aria-hidden SVG)."""
    return page.evaluate(
        """id => { const p = document.querySelector(`path.edge[data-edge="${id}"]`);
                   p.scrollIntoView({block: "center", inline: "center"});
                   const at = p.getPointAtLength(p.getTotalLength() / 2);
                   const m = p.getScreenCTM();
                   return {x: at.x * m.a + at.y * m.c + m.e, y: at.x * m.b + at.y * m.d + m.f}; }""", edge_id)


def test_edge_summary_and_its_view_stats_link(page: Page):
    """ND11: after a run, clicking the edge Reshape → Softmax summarises what flowed through
    it (type, shape, dtype, min/max/mean); its View stats link opens Node details on Reshape's
    Stats tab with that port focused."""
    editor = Inspecting(page, js=True)
    editor.open_example()
    editor.run_to_the_end()

    point = edge_point(page, "e-reshape-softmax")
    page.mouse.click(point["x"], point["y"])
    summary = page.get_by_role("dialog", name="Reshape → Softmax (tensor)")
    expect(summary).to_be_visible()
    t = torch.tensor(VALUES)
    for name, value in (("Shape", "[1, 16]"), ("Dtype", "float32")):
        expect(summary.get_by_role("row", name=re.compile(rf"^{name}\b"))).to_contain_text(value)
    for name in ("Type", "Min", "Max", "Mean"):
        expect(summary.get_by_role("rowheader", name=name, exact=True)).to_be_visible()
    expect(summary.get_by_role("row", name=re.compile(r"^Min\b"))).to_contain_text(fmt(t.min().item()))
    expect(summary.get_by_role("row", name=re.compile(r"^Max\b"))).to_contain_text(fmt(t.max().item()))

    summary.get_by_role("link", name="View stats", exact=True).click()
    details = editor.expect_details_of("Reshape")
    expect(summary).to_be_hidden()
    expect(editor.details_tab("Stats")).to_have_attribute("aria-current", "page")
    focused = details.get_by_role("article", name="Statistics of tensor", exact=True)
    expect(focused).to_have_class(re.compile(r"\bfocused\b"))    # FALLBACK: focus is a class only
    expect(focused.get_by_role("row", name=COUNT_16)).to_be_visible()
    expect(focused.get_by_role("rowheader", name=ZERO_FRACTION)).to_be_visible()
    editor.close_details()


# -- without JavaScript ---------------------------------------------------------------------

def test_step_5_without_javascript(nojs_page: Page):
    """WK8, WK9, WK10, IN3, IN4, ND5, ND7 without JavaScript: the example opens from the
    welcome screen, Run refreshes the page until every node is Completed, Softmax's output is
    heat-coloured, Reshape's divider shows the shape change, and Open details is a page with
    the same tabs as links."""
    page = nojs_page
    editor = Inspecting(page, js=False)
    editor.open_example()
    editor.run_to_the_end()

    editor.inspect("Softmax")
    expect_softmax_step_5(editor)
    editor.inspect("Reshape")
    expect_reshape_step_5(editor)

    editor.click(editor.select("Reshape").get_by_role("link", name="Open details", exact=True))
    assert re.search(r"/details/reshape/", page.url), page.url
    expect(page.get_by_role("textbox", name="Node name", exact=True)).to_have_value("Reshape")
    tabs = page.get_by_role("navigation", name="Node details tabs")
    editor.click(tabs.get_by_role("link", name="Outputs", exact=True))
    out = page.get_by_role("article", name="Output tensor", exact=True)
    expect(out.get_by_role("cell")).to_have_text([fmt(v) for v in VALUES])
    editor.click(tabs.get_by_role("link", name="Stats", exact=True))
    expect(page.get_by_role("rowheader", name=ZERO_FRACTION)).to_have_count(2)
    editor.click(page.get_by_role("navigation", name="Other nodes").get_by_role("link", name="Next node →"))
    expect(page.get_by_role("textbox", name="Node name", exact=True)).to_have_value("Softmax")
    editor.click(page.get_by_role("link", name="Close node details", exact=True))
    expect(editor.card("Softmax")).to_be_visible()
