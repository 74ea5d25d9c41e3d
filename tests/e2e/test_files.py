"""My files in a real browser, on a school laptop (1366x768) and a classroom display
(1920x1080), with JavaScript on and off: reached from the editor's File menu by keyboard,
a file uploaded, downloaded and deleted after its confirmation. With CODEFYUI_SCREENS=<folder>
each step leaves a screenshot there."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e

SCREENS = os.environ.get("CODEFYUI_SCREENS", "")


def shot(page: Page, name: str) -> None:
    if SCREENS:
        Path(SCREENS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{SCREENS}/{page.screen_name}-{name}.png", full_page=True)


def test_my_files_upload_download_and_delete(screen_page):
    page, js = screen_page
    page.goto("/editor/")
    page.get_by_role("button", name="New blank graph").click()
    menu = page.get_by_role("toolbar", name="Graph").locator("summary").filter(has_text="File")  # FALLBACK: a <summary> has no role
    menu.focus()
    page.keyboard.press("Enter")
    link = page.get_by_role("link", name="My files", exact=True)
    expect(link).to_be_visible()
    shot(page, "file-menu")
    link.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="My files")).to_be_visible()
    expect(page.get_by_text("No files yet.")).to_be_visible()
    expect(page.get_by_text("Space used: 0 bytes of 200 MB (0%)")).to_be_visible()
    shot(page, "files-empty")

    page.get_by_label("Upload a file (such as a .pt file from your teacher)").set_input_files(
        {"name": "teacher model.pt", "mimeType": "application/octet-stream", "buffer": b"\x80weights" * 4096})
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.get_by_text("Uploaded teacher model.pt.")).to_be_visible()
    row = page.get_by_role("row", name="teacher model.pt")
    expect(row).to_contain_text("32 KB")
    shot(page, "files-one")

    with page.expect_download() as download:
        row.get_by_role("link", name="Download teacher model.pt").click()
    assert download.value.suggested_filename == "teacher model.pt"
    assert Path(download.value.path()).read_bytes() == b"\x80weights" * 4096

    row.get_by_role("link", name="Delete teacher model.pt…").click()
    expect(page.get_by_role("heading", name="Delete teacher model.pt?")).to_be_visible()
    shot(page, "files-delete")
    page.get_by_role("button", name="Delete teacher model.pt", exact=True).click()
    expect(page.get_by_text("Deleted teacher model.pt.")).to_be_visible()
    expect(page.get_by_text("No files yet.")).to_be_visible()
    page.get_by_role("link", name="← Back to the editor").click()
    expect(page.get_by_role("toolbar", name="Graph")).to_be_visible()
