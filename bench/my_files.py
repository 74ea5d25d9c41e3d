"""My files with many files: server time of the My files page (its first page of 50, newest
first) for a student with 1,000 files (CODEFYUI_USER_FILES_MAX_FILES' default), median of
several GETs through Django's test client with the student logged in; and the time of one
upload into that folder (a new file, the limit raised by one for it, and one replacing a file
of the same name), since a write keeps the folder's totals instead of listing it. For folders
filled before the count limit, the page with 12,000 files and its size are printed too.

Goal (issue: "My files counts what it costs"): the page under 100 ms with 1,000 files.
Run: .venv/bin/python bench/my_files.py
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
_tmp = tempfile.mkdtemp(prefix="codefyui-bench-")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "codefyui.settings")
os.environ["DATABASE_URL"] = f"sqlite:///{_tmp}/bench.sqlite3"
os.environ["CODEFYUI_VAR_DIR"] = _tmp
os.environ["CODEFYUI_USER_FILES_DIR"] = f"{_tmp}/userfiles"
os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.files.uploadedfile import SimpleUploadedFile  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from apps.runs import service  # noqa: E402
from codefyui import conf  # noqa: E402

REPEATS = 9


def student(name: str, files: int) -> Client:
    """A logged-in student whose folder holds ``files`` small files of distinct ages."""
    user = get_user_model().objects.create_user(name, password=f"pw-{name}-123")
    folder = service.user_files(user.pk).folder
    folder.mkdir(parents=True)
    for i in range(files):
        path = folder / f"model_{i:05d}.pt"
        path.write_bytes(b"w" * (100 + i % 5000))
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    client = Client()
    client.force_login(user)
    return client


def page_ms(client: Client) -> tuple[float, int]:
    """Median milliseconds of the My files page, and its size in bytes."""
    client.get("/editor/files/")  # warm the templates and the kept totals
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        response = client.get("/editor/files/")
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.status_code
    return statistics.median(times), len(response.content)


def upload_ms(client: Client, name: str, then=lambda: None) -> float:
    """Median milliseconds of an upload of ``name`` (a 4 KB file), ``then`` run untimed after each."""
    times = []
    for _ in range(REPEATS):
        upload = SimpleUploadedFile(name, b"u" * 4096)
        start = time.perf_counter()
        response = client.post("/editor/files/upload", {"file": upload})
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 302, response.status_code
        then()
    return statistics.median(times)


def main() -> None:
    call_command("migrate", verbosity=0)
    thousand = student("ada", 1000)
    page, size = page_ms(thousand)
    folder = service.user_files(get_user_model().objects.get(username="ada").pk)
    conf.USER_FILES_MAX_FILES = 1001  # room for the one new file timed below
    new = upload_ms(thousand, "new.pt", then=lambda: folder.delete("new.pt"))
    conf.USER_FILES_MAX_FILES = 1000
    replacing = upload_ms(thousand, "model_00500.pt")
    assert folder.usage() == folder.scan() and folder.usage().files == 1000
    legacy, legacy_size = page_ms(student("old", 12_000))
    print(f" 1,000 files: page {page:6.1f} ms ({size / 1024:.0f} KB of HTML)")
    print(f"12,000 files: page {legacy:6.1f} ms ({legacy_size / 1024:.0f} KB of HTML; a folder from before the limit)")
    print(f"upload into 1,000 files: a new file {new:.1f} ms, replacing one {replacing:.1f} ms")
    print(f"figure: my_files_page_ms_1000_files = {page:.1f}")


if __name__ == "__main__":
    main()
