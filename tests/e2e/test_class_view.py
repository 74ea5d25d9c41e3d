"""The class view, live, and a look over a student's shoulder (issue 48, items 4 and 5): a
teacher's class page shows a student's run fail without a reload, and the Look opens the
student's graph read-only on the failing node."""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import RUN_TIMEOUT_MS, _collect_errors, _context, log_in

pytestmark = pytest.mark.e2e


def failing_graph() -> bytes:
    """The walkthrough with a Reshape that cannot fit its 16 values into 3 × 7."""
    doc = json.loads(open("examples/walkthrough.json").read())
    doc["name"] = "Shapes lesson"
    next(n for n in doc["nodes"] if n["id"] == "reshape")["data"]["params"]["shape"] = "3,7"
    return json.dumps(doc).encode()


def test_a_teacher_sees_a_failed_run_arrive_and_looks_at_it_read_only(browser, web_server, student, request):
    username, password = student
    web_server.manage("shell", "-c", (
        "from django.contrib.auth import get_user_model\n"
        "from apps.accounts.models import Classroom\n"
        "from apps.accounts.roles import enrol, make_teacher\n"
        "User = get_user_model()\n"
        f"room = Classroom.objects.create(name='Class of {username}')\n"
        f"make_teacher(User.objects.create_user('teacher-{username}', password={password!r}), room)\n"
        f"enrol(User.objects.get(username={username!r}), room)\n"))
    screen = {"width": 1366, "height": 768}
    teaching = _context(browser, web_server, viewport=screen)
    teacher = teaching.new_page()
    _collect_errors(teacher, request)
    log_in(teacher, f"teacher-{username}", password)
    teacher.get_by_role("link", name="Classes").click()
    teacher.get_by_role("link", name=f"Class of {username}").click()
    row = teacher.get_by_role("row", name=username)
    expect(row).to_contain_text("Not run yet")
    teacher.evaluate("window.stillThisPage = true")

    learning = _context(browser, web_server, viewport=screen)
    pupil = learning.new_page()
    _collect_errors(pupil, request)
    log_in(pupil, username, password)
    pupil.goto("/editor/")
    pupil.get_by_label("Import…").set_input_files(
        files=[{"name": "shapes.json", "mimeType": "application/json", "buffer": failing_graph()}])
    with pupil.expect_navigation():
        pupil.get_by_role("button", name="Import", exact=True).click()
    pupil.get_by_role("toolbar", name="Graph").get_by_role("button", name="Run", exact=True).click()
    expect(pupil.locator("#run-status")).to_contain_text("failed", timeout=RUN_TIMEOUT_MS)

    # pushed to the class page: the table fetched itself again, the page was not reloaded
    expect(row).to_contain_text("Failed", timeout=RUN_TIMEOUT_MS)
    expect(row).to_contain_text("Shapes lesson")
    assert teacher.evaluate("window.stillThisPage") is True
    teacher.screenshot(path=str(web_server.var_dir / "class-view.png"))

    row.get_by_role("link", name="Look").click()
    expect(teacher.locator(".look-banner")).to_contain_text("Read-only")
    expect(teacher.get_by_role("button", name="Run", exact=True)).to_have_count(0)
    expect(teacher.get_by_role("button", name="Undo")).to_have_count(0)
    expect(teacher.locator("#node-reshape.selected")).to_be_visible()
    expect(teacher.locator("#run-status")).to_contain_text("failed")
    teacher.screenshot(path=str(web_server.var_dir / "look.png"))
    teaching.close()
    learning.close()
