"""A lesson with a class, end to end in a real Chromium at 1366×768 (issue 48, item 8).

A teacher made by ``manage.py addclass`` imports a roster of 30 by pasting a CSV, sees the 30
login cards with their passwords and prints them (Chromium's own PDF of the print layout), hands
out the walkthrough lesson; a student logs in with the password from their card, opens the
handed-out tab, changes Reshape's shape so the run fails and runs it; the teacher finds the run
under "Failed runs" in the class view and opens the failing node's Inspector read-only. The
teacher's part again with JavaScript off (the student's part without JavaScript is the editor's
own tests').

Things are found by role and accessible name; the few fallback locators are marked FALLBACK.
"""
from __future__ import annotations

import re
import zlib

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import RUN_TIMEOUT_MS, _collect_errors, _context, log_in
from tests.e2e.test_inspector import Inspecting

pytestmark = pytest.mark.e2e

SCREEN = {"width": 1366, "height": 768}
LESSON = "Softmax walkthrough"
RESHAPE_ERROR = "16 values cannot be reshaped to [3, 7]"
HASHING_MS = 120_000
CARDS_PER_SHEET = 10     # roster.css: 85 mm × 54 mm cards, two across and five down an A4 sheet


# -- a teacher, made as an administrator makes one ---------------------------------------------
def add_class(web_server, name: str, teacher: str) -> str | None:
    """``manage.py addclass NAME --teacher USER``: the teacher's printed password (None when the
    teacher had an account already)."""
    out = web_server.manage("addclass", name, "--teacher", teacher)
    found = re.search(rf"Created teacher {re.escape(teacher)} with password: (\S+)", out)
    return found.group(1) if found else None


@pytest.fixture(scope="module")
def teacher_account(web_server) -> dict:
    """One teacher for the module's classes: made with the first class, added to the others."""
    return {"username": "ms-rivera", "password": None}


def class_for(web_server, account: dict, name: str) -> None:
    password = add_class(web_server, name, account["username"])
    if password:
        account["password"] = password
    assert account["password"], "addclass printed no password for the new teacher"


def roster_csv(prefix: str, n: int) -> str:
    """A class list as a spreadsheet pastes it: a header row, then username, display name."""
    rows = ["username,display name"] + [f"{prefix}{i:02d},Pupil {i:02d} {prefix.capitalize()}" for i in range(1, n + 1)]
    return "\n".join(rows) + "\n"


# -- reading Chromium's PDF: its pages, and the text on each ----------------------------------
def pdf_pages(data: bytes) -> list[str]:
    """The text of each page of a PDF that Chromium (Skia) wrote: its content streams' text
    runs, each font's glyphs read back through that font's ToUnicode map. Enough to see what a
    printed sheet carries, not a general PDF reader."""
    objects = {int(m.group(1)): m.group(2) for m in re.finditer(rb"(\d+) 0 obj(.*?)endobj", data, re.S)}

    def stream(n: int) -> bytes:
        raw = objects[n].split(b"stream", 1)[1].lstrip(b"\r\n")
        return zlib.decompressobj().decompress(raw)

    def to_unicode(n: int) -> dict[int, str]:
        cmap, text = {}, stream(n).decode("latin-1")
        for block in re.findall(r"beginbfchar(.*?)endbfchar", text, re.S):
            for src, dst in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
                cmap[int(src, 16)] = bytes.fromhex(dst).decode("utf-16-be")
        for block in re.findall(r"beginbfrange(.*?)endbfrange", text, re.S):
            for lo, hi, dst in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
                first = int(dst, 16)
                for i, code in enumerate(range(int(lo, 16), int(hi, 16) + 1)):
                    cmap[code] = chr(first + i)
        return cmap

    kids = re.search(rb"/Type /Pages.*?/Kids \[([^\]]*)\]", data, re.S).group(1)
    pages = []
    for page_n in (int(n) for n in re.findall(rb"(\d+) 0 R", kids)):
        page = objects[page_n]
        fonts = {name.decode(): to_unicode(int(re.search(rb"/ToUnicode (\d+) 0 R", objects[int(ref)]).group(1)))
                 for name, ref in re.findall(rb"/(F\d+) (\d+) 0 R", page)}
        content = b"".join(stream(int(n)) for n in re.findall(rb"/Contents (\d+) 0 R", page)).decode("latin-1")
        runs, font = [], {}
        for m in re.finditer(r"/(F\d+) [\d.]+ Tf|\[((?:[^\]])*)\]\s*TJ|<([0-9A-Fa-f]*)>\s*Tj", content):
            if m.group(1):
                font = fonts[m.group(1)]
                continue
            hexes = re.findall(r"<([0-9A-Fa-f]*)>", m.group(2)) if m.group(2) is not None else [m.group(3)]
            runs.append("".join(font.get(int(h[i:i + 4], 16), "?") for h in hexes for i in range(0, len(h), 4)))
        pages.append("".join(runs))     # Skia places many glyphs one by one: a run is not a word
    return pages


# -- the teacher's steps, JavaScript on or off (every one of them is a link or a plain form) ----
def teacher_page(browser, web_server, request, js: bool) -> Page:
    context = _context(browser, web_server, viewport=SCREEN, java_script_enabled=js)
    page = context.new_page()
    if js:
        _collect_errors(page, request)
    return page


def open_class(page: Page, name: str) -> None:
    page.get_by_role("banner").get_by_role("link", name="Classes", exact=True).click()
    expect(page.get_by_role("heading", name="Your classes")).to_be_visible()
    page.get_by_role("link", name=name, exact=True).click()
    expect(page.get_by_role("heading", level=1, name=name)).to_be_visible()


def import_roster(page: Page, class_name: str, prefix: str, n: int) -> dict[str, str]:
    """From the class view: paste the class list, add it; the login cards come back with the
    passwords, once. Returns each username's password as its card shows it."""
    page.get_by_role("navigation", name="This class").get_by_role("link", name="Students and passwords").click()
    expect(page.get_by_role("heading", level=1, name=f"Students of {class_name}")).to_be_visible()
    page.get_by_label("Paste a class list (CSV)").fill(roster_csv(prefix, n))
    # each account's password is hashed (slow on purpose): 30 take seconds on a shared machine
    with page.expect_navigation(timeout=HASHING_MS):
        page.get_by_role("button", name="Add the pasted list").click(timeout=HASHING_MS)
    expect(page.get_by_role("heading", level=1, name=f"Added {n} students to {class_name}")).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text("shown only this once")
    cards = page.get_by_role("list", name="Login cards").get_by_role("listitem")
    expect(cards).to_have_count(n)
    passwords = {}
    for text in cards.all_inner_texts():
        username = re.search(r"Username\s+(\S+)", text).group(1)
        passwords[username] = re.search(r"Password\s+(\S+)", text).group(1)
        assert re.fullmatch(r"[a-km-z2-9-]{8,}", passwords[username]), text   # no 0/O, 1/l on a card
    assert sorted(passwords) == [f"{prefix}{i:02d}" for i in range(1, n + 1)]
    card = cards.filter(has_text=f"{prefix}01")
    expect(card).to_contain_text(f"Pupil 01 {prefix.capitalize()}")
    expect(card).to_contain_text(page.url.split("/classes/")[0] + "/")    # the address to go to
    return passwords


def print_cards(page: Page, prefix: str, n: int, passwords: dict[str, str]) -> None:
    """Chromium's print of the cards page: every card on paper with its password, ten to an A4
    sheet, none cut across two sheets, and nothing of the screen's page around them."""
    pdf = page.pdf(format="A4", prefer_css_page_size=True)
    sheets = pdf_pages(pdf)
    assert len(sheets) == -(-n // CARDS_PER_SHEET), [s[:80] for s in sheets]
    assert [s.count("Username") for s in sheets] == [min(CARDS_PER_SHEET, n - i) for i in range(0, n, CARDS_PER_SHEET)]
    for i in range(1, n + 1):
        username = f"{prefix}{i:02d}"
        holding = [s for s in sheets if f"Username{username}Password" in s]
        assert len(holding) == 1, (username, len(holding))           # on one sheet, not cut across two
        assert passwords[username] in holding[0], username
        assert f"Pupil {i:02d} {prefix.capitalize()}" in holding[0], username
    assert "Print these cards now" not in "".join(sheets)            # the screen's note is not printed
    assert "Log out" not in "".join(sheets)


def hand_out(page: Page, class_name: str, n: int) -> None:
    page.get_by_role("link", name=f"← Back to the students of {class_name}").click()
    page.get_by_role("link", name=f"← Back to the class {class_name}").click()
    page.get_by_role("navigation", name="This class").get_by_role("link", name="Hand out a lesson").click()
    expect(page.get_by_role("heading", level=1, name=f"Hand out a lesson to {class_name}")).to_be_visible()
    page.get_by_label("What to hand out").select_option(label=LESSON)
    with page.expect_navigation():
        page.get_by_role("button", name=f"Hand it out to {class_name}").click()
    expect(page.get_by_role("status")).to_contain_text(f"Handed out “{LESSON}”: {n} students got their own copy")
    expect(page.get_by_role("rowheader", name=LESSON)).to_be_visible()


def student_runs_it_and_it_fails(browser, web_server, request, username: str, password: str) -> None:
    """The student's part: log in with the card's password, open the handed-out tab, make
    Reshape's shape one the 16 values cannot take, run."""
    context = _context(browser, web_server, viewport=SCREEN)
    page = context.new_page()
    _collect_errors(page, request)
    log_in(page, username, password)
    page.goto("/editor/")
    editor = Inspecting(page, js=True)
    tab = page.get_by_role("navigation", name="Open graphs").get_by_role("link", name=LESSON)
    editor.click(tab)          # the handed-out copy, a tab of its own
    expect(tab).to_have_attribute("aria-current", "page")
    editor.set_params("Reshape", shape="3,7")
    editor.run()
    expect(editor.run_status()).to_contain_text("failed", timeout=RUN_TIMEOUT_MS)
    expect(editor.badge("Reshape")).to_contain_text(RESHAPE_ERROR)
    context.close()


def find_the_failed_run_and_look(page: Page, class_name: str, student: str, name: str, n: int, js: bool) -> None:
    """The class view, "Failed runs": only that student; Look opens their graph read-only on the
    failing node, and its Inspector shows what went wrong."""
    page.get_by_role("link", name=f"← Back to the class {class_name}").click()
    filters = page.get_by_role("navigation", name="Show students")
    filters.get_by_role("link", name="Failed runs").click()
    expect(filters.get_by_role("link", name="Failed runs")).to_have_attribute("aria-current", "true")
    table = page.get_by_role("table", name=f"Students of {class_name} and their last runs")
    rows = table.get_by_role("row")
    expect(rows).to_have_count(2)                       # the header, and the one student whose run failed
    row = table.get_by_role("row", name=re.compile(rf"\b{student}\b"))
    expect(row).to_contain_text("Failed")
    expect(row).to_contain_text(LESSON)
    expect(row).to_contain_text(RESHAPE_ERROR)
    filters.get_by_role("link", name="Everyone").click()
    expect(rows).to_have_count(1 + n)
    filters.get_by_role("link", name="Failed runs").click()

    row.get_by_role("link", name=re.compile(r"^Look at ")).click()
    editor = Inspecting(page, js=js)
    banner = page.get_by_role("note").filter(has_text="Looking at")
    expect(banner).to_contain_text(f"Looking at {name}'s graph")
    expect(banner).to_contain_text(f"graph {LESSON}. Read-only")
    expect(banner.get_by_role("link", name=f"Back to the class {class_name}")).to_be_visible()
    graph = page.get_by_role("toolbar", name="Graph")
    expect(graph.get_by_role("button", name="Run", exact=True)).to_have_count(0)
    expect(page.get_by_role("button", name="Undo")).to_have_count(0)
    expect(editor.run_status()).to_contain_text("failed")
    expect(editor.badge("Reshape")).to_contain_text(RESHAPE_ERROR)
    inspector = editor.inspect("Reshape")
    expect(inspector).to_have_accessible_name("Inspector Reshape")
    expect(editor.outputs().get_by_role("status")).to_have_text("Failed in the last run")
    expect(editor.inputs()).to_contain_text("shape [1, 4, 4]")     # what reached it: the exact tensor
    expect(page.get_by_role("button", name="Apply parameters")).to_have_count(0)


# -- the tests ----------------------------------------------------------------------------------
@pytest.mark.parametrize("js, class_name, prefix, size, student", [
    (True, "Year 9 class of 30", "nine", 30, "07"), (False, "Year 8 without scripts", "eight", 4, "03")],
    ids=["js", "nojs"])
def test_a_roster_to_a_failed_run_looked_at(browser, web_server, teacher_account, request, js, class_name, prefix,
                                            size, student):
    """Roster pasted (30 with JavaScript), cards shown and printed, walkthrough handed out; a
    student's run fails; the teacher finds it under Failed runs and looks at Reshape's Inspector.
    Without JavaScript every teacher page is links and plain forms (the student's run still uses it)."""
    class_for(web_server, teacher_account, class_name)
    page = teacher_page(browser, web_server, request, js=js)
    log_in(page, teacher_account["username"], teacher_account["password"])
    open_class(page, class_name)
    passwords = import_roster(page, class_name, prefix, size)
    print_cards(page, prefix, size, passwords)
    hand_out(page, class_name, size)

    username = f"{prefix}{student}"
    student_runs_it_and_it_fails(browser, web_server, request, username, passwords[username])

    find_the_failed_run_and_look(page, class_name, username, f"Pupil {student} {prefix.title()}", size, js=js)
    page.context.close()
