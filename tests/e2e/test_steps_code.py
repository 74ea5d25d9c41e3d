"""The Steps tab's typeset maths and Node details' Code pane, on a school laptop's 1366x768
and a 1920x1080 display, with and without JavaScript. With CODEFYUI_SCREENS=<folder> each
leaves screenshots there (never committed)."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.test_screen import Screen

pytestmark = pytest.mark.e2e

SCRIPT = ("def run(inputs, params):\n    x = inputs['in1']\n    print('total', x.sum().item())\n"
          "    return {'out1': x * 2}\n")


@pytest.fixture(scope="module")
def script_nodes_on(web_server):
    """An administrator turns script nodes on (the admin's switch), for the rest of the session."""
    web_server.manage("shell", "-c", "from apps.runs.models import ScriptNodes\n"
                                     "ScriptNodes.objects.update_or_create(pk=1, defaults={'enabled': True})")


def open_details(editor: Screen) -> None:
    """The node panel's Open details link: a dialog with JavaScript, a page without."""
    link = editor.node_tab("PythonScript").get_by_role("link", name="Open details", exact=True)
    editor.reachable(link)
    if editor.js:
        link.click()
        expect(editor.page.get_by_role("dialog", name="Node details")).to_be_visible()
        editor.page.wait_for_function(f"() => {editor.SETTLED}")
    else:
        with editor.page.expect_navigation():
            link.click()


def test_the_steps_tab_shows_one_step_with_its_formula_typeset(screen_page):
    """IN5, TR1: with Verbose internals on, Softmax's trace shows one step at a time, chosen by
    a link, its description's formula as MathML (no script needed) above its grids."""
    page, js = screen_page
    editor = Screen(page, js=js)
    editor.open_example()
    settings = editor.settings()
    recording = settings.get_by_role("region", name="Recording & Inspection")
    recording.get_by_role("checkbox", name="Verbose internals").check()
    editor.use(recording.get_by_role("button", name="Apply"))
    editor.run_to_the_end()
    editor.select_node("Softmax")
    editor.show_tab("Steps")
    steps = editor.inspector.get_by_role("navigation", name="Steps")
    expect(steps.get_by_role("link")).to_have_text(["1. logits", "2. max_subtract", "3. exp", "4. partition", "5. divide"])
    editor.use(steps.get_by_role("link", name="5. divide"))
    step = editor.inspector.get_by_role("region", name=re.compile(r"^5\. divide"))
    expect(step).to_contain_text("step 5 of 5")
    formula = step.locator("math[display=block]")
    editor.reachable(formula)
    assert formula.bounding_box()["height"] > 20, "the fraction is typeset, not printed as text"
    expect(step.get_by_role("group", name="Values of output").get_by_role("cell")).to_have_count(16)
    editor.shot("steps-softmax-divide")
    editor.use(steps.get_by_role("link", name="4. partition"))
    expect(editor.inspector.get_by_role("region", name=re.compile(r"^4\. partition"))).to_be_visible()
    editor.fits()


def test_the_code_pane_edits_the_script_and_shows_what_it_printed(screen_page, script_nodes_on):
    """ND3: a script node's Node details open on Code: the script in a textarea (line numbers
    beside it), its port counts, and after a run what it printed and returned."""
    page, js = screen_page
    editor = Screen(page, js=js)
    page.goto("/editor/")
    editor.use(page.get_by_role("button", name="New blank graph"))
    for type_ in ("TensorInput", "PythonScript", "Start"):
        editor.add(type_)
    row = editor.node_tab("PythonScript").get_by_role("region", name="Inputs").locator("form")
    row.get_by_label("in1 (optional)").select_option(label="TensorInput.tensor")  # a script's inputs are optional
    editor.use(row.get_by_role("button", name="Connect"))
    start = editor.node_tab("Start")
    start.get_by_label("Connect trigger to").select_option(label="TensorInput")
    editor.use(start.get_by_role("button", name="Connect trigger"))
    open_details(editor)
    code = page.get_by_role("textbox", name=re.compile(r"^Script"))
    expect(code).to_be_visible()
    expect(page.get_by_role("link", name="Code", exact=True)).to_have_attribute("aria-current", "page")
    code.fill(SCRIPT)
    apply = page.get_by_role("button", name="Apply script")
    editor.reachable(apply)
    if js:  # the dialog's own fragment is swapped
        editor.swapped("#details", apply.click)
    else:
        with page.expect_navigation():
            apply.click()
    expect(page.get_by_role("textbox", name=re.compile(r"^Script"))).to_have_value(SCRIPT)
    expect(page.locator(".code-lines li")).to_have_count(5)
    editor.shot("code-before-run")
    if js:
        editor.close_details()
    else:
        with page.expect_navigation():
            page.get_by_role("link", name="Close node details").click()
    editor.run_to_the_end(("Start", "TensorInput", "PythonScript"))
    open_details(editor)
    result = page.get_by_role("region", name="Last run")
    expect(result).to_contain_text("total")
    editor.reachable(page.get_by_role("textbox", name=re.compile(r"^Script")))
    editor.shot("code-after-run")
