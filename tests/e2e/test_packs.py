"""A plugin panel in the browser, with and without JavaScript, at 1366x768 and 1920x1080:
docked from the Plugin Center it brings the right-hand column (IN1), shares it with the
selected node, undocks to float over the canvas, docks again and closes. The Package Center
and the Plugin Center open from Settings (SP7). With CODEFYUI_SCREENS=<folder> each step
leaves a screenshot there."""
from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import PASSWORD, SCREENS, _collect_errors, _context, log_in
from tests.demo_pack import graph_with
from tests.e2e.test_screen import Screen

pytestmark = pytest.mark.e2e


def open_center(screen: Screen, name: str) -> None:
    page = screen.page
    page.get_by_text("Settings", exact=True).click()
    with page.expect_navigation(wait_until="load"):
        page.get_by_role("link", name=name, exact=True).click()
    expect(page.get_by_role("heading", name=name, level=1)).to_be_visible()


def test_package_center_opens_from_settings_with_the_installed_packs(screen_page):
    """SP7: the Package Center row opens the center, which lists the installed packs."""
    page, js = screen_page
    screen = Screen(page, js)
    screen.open_example()
    open_center(screen, "Package Center")
    for name in ("foundations", "deep", "edu", "rl"):
        expect(page.get_by_role("heading", name=re.compile(rf"\b{name} · version "), level=2)).to_be_visible()
    expect(page.get_by_role("heading", name="Installing a pack")).to_be_visible()
    screen.shot("package-center")


def test_a_docked_plugin_panel_brings_the_column_undocks_and_closes(screen_page):
    """IN1: the right-hand column appears when a plugin panel is docked there."""
    page, js = screen_page
    screen = Screen(page, js)
    screen.open_example()
    plugin = page.get_by_role("complementary", name="Plugin Foundations")
    expect(plugin).to_have_count(0)
    expect(page.locator(".workbench.with-side")).to_have_count(0)

    open_center(screen, "Plugin Center")
    screen.shot("plugin-center")
    with page.expect_navigation(wait_until="load"):
        page.get_by_role("button", name="Dock Foundations panel in the Inspector").click()
    expect(plugin).to_be_visible()
    expect(page.locator(".workbench.with-side .side-stack")).to_be_visible()  # the column, for the panel alone
    expect(plugin).to_contain_text("Select a node to see its formulas.")
    screen.fits()
    screen.shot("panel-docked")

    screen.select_node("Softmax")
    expect(screen.panel("Softmax")).to_be_visible()
    expect(plugin).to_be_visible()
    screen.reachable(plugin.get_by_role("button", name="Undock"))
    screen.shot("panel-docked-with-node")

    screen.use(plugin.get_by_role("button", name="Undock"))
    expect(plugin).to_have_class(re.compile(r"\bfloating\b"))
    expect(screen.panel("Softmax")).to_be_visible()
    screen.reachable(plugin.get_by_role("button", name="Dock", exact=True))
    screen.shot("panel-floating")

    screen.use(plugin.get_by_role("button", name="Dock", exact=True))
    expect(plugin).not_to_have_class(re.compile(r"\bfloating\b"))
    screen.use(plugin.get_by_role("button", name="Close the Foundations panel"))
    expect(plugin).to_have_count(0)
    expect(screen.panel("Softmax")).to_be_visible()


@pytest.fixture(scope="module")
def teacher(web_server) -> tuple[str, str]:
    """A staff account, made once for this module."""
    web_server.manage("shell", "-c", (
        "from django.contrib.auth import get_user_model\n"
        "User = get_user_model()\n"
        f"User.objects.filter(username='teacher').exists() or User.objects.create_user('teacher', password={PASSWORD!r}, is_staff=True)\n"))
    return "teacher", PASSWORD


@pytest.mark.parametrize("size", list(SCREENS))
def test_staff_disable_and_enable_a_pack_in_the_package_center(browser, web_server, teacher, request, size):
    context = _context(browser, web_server, viewport=SCREENS[size])
    page = context.new_page()
    _collect_errors(page, request)
    log_in(page, *teacher)
    page.screen_name = f"{size}-js-staff"
    screen = Screen(page, True)
    page.goto("/editor/packs/")
    deep = page.get_by_role("article", name=re.compile(r"\bdeep · version "))
    try:
        with page.expect_navigation(wait_until="load"):
            deep.get_by_role("button", name=re.compile(r"^Disable ")).click()
        expect(page.get_by_role("status")).to_contain_text("Pack deep disabled")
        expect(deep).to_contain_text("✗ Disabled")
        screen.shot("package-center")
        with page.expect_navigation(wait_until="load"):
            deep.get_by_role("button", name=re.compile(r"^Enable ")).click()
        expect(deep).to_contain_text("✓ Enabled")
    finally:  # the other browser tests read every pack as enabled
        web_server.manage("shell", "-c", "from apps.graphs.models import PackSwitch; PackSwitch.switch('deep', True)")
        context.close()


def test_a_graph_needing_a_missing_pack_opens_names_it_and_does_not_run(screen_page, tmp_path):
    page, js = screen_page
    screen = Screen(page, js)
    screen.open_example()
    graph = tmp_path / "needs-vision.json"
    graph.write_text(json.dumps(graph_with("vision:Edu-Blur")))
    page.get_by_text("File", exact=True).click()
    page.get_by_label("Import… (graph or workspace file)").set_input_files(graph)
    with page.expect_navigation(wait_until="load"):
        page.get_by_role("button", name="Import", exact=True).click()
    card = screen.card("Edu-Blur")  # named without its namespace
    expect(card).to_contain_text("Pack vision: not installed")
    screen.click(page.get_by_role("button", name="Run", exact=True))
    expect(page.get_by_role("alert")).to_contain_text(
        "This graph uses nodes of the pack 'vision', which is not installed on this server.")
    screen.shot("missing-pack")
