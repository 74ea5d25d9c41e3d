"""My files (apps/editor/views/files.py): a student's list, download, upload and delete, each
only ever of their own folder, within the quota, without JavaScript (links and form posts)."""
from __future__ import annotations

import html
import os

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.runs import service
from apps.runs.engine import megabytes
from codefyui import conf

pytestmark = pytest.mark.django_db


@pytest.fixture
def saved(student):
    files = service.user_files(student.pk)
    files.save("model_weights.pt", b"w" * 2048)
    return files


def test_the_list_shows_each_file_its_size_and_the_space_used(student_client, saved):
    page = student_client.get("/editor/files/").content.decode()
    assert '<th scope="row"><code>model_weights.pt</code></th>' in page and "<td class=\"num\">2 KB</td>" in page
    block = megabytes(saved.block_size())  # 2 KB take a whole block of the disk (4 KB)
    assert f"Space used: {block} of 200 MB (0%)" in page and f"1 of 1000 files, {block} of 200 MB." in page
    assert f"The server's disk stores files in blocks of {block}, so even a tiny file takes {block} of your space." in page
    assert 'href="/editor/files/model_weights.pt/download"' in page


def test_the_editor_file_menu_leads_to_my_files(student_client):
    student_client.post("/editor/tabs/new")
    page = student_client.get("/editor/", follow=True).content.decode()
    assert 'href="/editor/files/">My files</a>' in page


def test_a_download_is_the_file_itself(student_client, saved):
    answer = student_client.get("/editor/files/model_weights.pt/download")
    assert answer.status_code == 200 and b"".join(answer.streaming_content) == b"w" * 2048
    assert answer["Content-Disposition"] == 'attachment; filename="model_weights.pt"'


def test_delete_asks_first_then_a_post_deletes(student_client, saved):
    confirm = student_client.get("/editor/files/model_weights.pt/delete").content.decode()
    assert "Delete model_weights.pt?" in confirm and 'method="post"' in confirm
    assert saved.find("model_weights.pt") is not None  # asking changed nothing
    answer = student_client.post("/editor/files/model_weights.pt/delete", follow=True)
    assert saved.list() == [] and "Deleted model_weights.pt." in answer.content.decode()


def test_an_upload_is_saved_under_a_safe_name(student_client, student):
    upload = SimpleUploadedFile("../../teacher's model.pt", b"t" * 100)
    answer = student_client.post("/editor/files/upload", {"file": upload}, follow=True)
    assert "Uploaded teacher_s model.pt." in answer.content.decode()
    assert [(f.name, f.size) for f in service.user_files(student.pk).list()] == [("teacher_s model.pt", 100)]


def test_an_upload_past_the_quota_is_refused_and_leaves_nothing(student_client, student, monkeypatch):
    monkeypatch.setattr(conf, "USER_FILES_MAX_MB", 1)
    upload = SimpleUploadedFile("big.pt", b"b" * (2 * 2**20))
    answer = student_client.post("/editor/files/upload", {"file": upload}, follow=True)
    assert "'big.pt' (2 MB) does not fit in your files" in html.unescape(answer.content.decode())
    assert service.user_files(student.pk).list() == []


def test_an_upload_without_a_file_says_what_to_do(student_client):
    answer = student_client.post("/editor/files/upload", follow=True)
    assert "Choose a file to upload." in answer.content.decode()


def test_the_list_shows_only_the_students_own_files(client, stranger, saved):
    client.force_login(stranger)
    page = client.get("/editor/files/").content.decode()
    assert '<th scope="row"><code>model_weights.pt' not in page and "No files yet." in page


def test_a_strangers_file_name_is_not_found(client, stranger, saved):
    client.force_login(stranger)
    assert client.get("/editor/files/model_weights.pt/download").status_code == 404
    assert client.get("/editor/files/model_weights.pt/delete").status_code == 404
    assert client.post("/editor/files/model_weights.pt/delete").status_code == 404
    assert saved.find("model_weights.pt") is not None


@pytest.mark.parametrize("name", ["..%2Fsecret", ".lock", "%2E%2E"])
def test_names_outside_the_list_are_not_found(student_client, saved, name):
    assert student_client.get(f"/editor/files/{name}/download").status_code == 404


# -- many files: the count limit and pages of the list -----------------------------------------------

def fill(student, count):
    """``count`` one-byte files put straight in the student's folder, f0000.pt the oldest."""
    folder = service.user_files(student.pk).folder
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"f{i:04d}.pt").write_bytes(b"x")
        os.utime(folder / f"f{i:04d}.pt", (1_700_000_000 + i, 1_700_000_000 + i))


def rows(page):
    return page.count('<th scope="row">')


def test_the_1001st_upload_is_refused_saying_how_many_and_where_to_delete(student_client, student):
    fill(student, 1000)
    answer = student_client.post("/editor/files/upload", {"file": SimpleUploadedFile("new.pt", b"n")}, follow=True)
    page = html.unescape(answer.content.decode())
    assert ("'new.pt' is not saved: you already have 1000 files in My files, the most you can keep "
            "(CODEFYUI_USER_FILES_MAX_FILES is 1000). Delete files you no longer need on the My files page") in page
    assert service.user_files(student.pk).find("new.pt") is None and "1000 of 1000 files" in page


def test_an_upload_over_a_file_at_the_limit_replaces_it(student_client, student):
    fill(student, 1000)
    answer = student_client.post("/editor/files/upload", {"file": SimpleUploadedFile("f0007.pt", b"new")}, follow=True)
    assert "Uploaded f0007.pt (it replaced the file of that name)." in answer.content.decode()
    assert service.user_files(student.pk).path("f0007.pt").read_bytes() == b"new"


def test_the_list_is_paged_newest_first_with_links_that_work_without_javascript(student_client, student):
    fill(student, 120)
    first = student_client.get("/editor/files/").content.decode()
    assert rows(first) == 50 and '<th scope="row"><code>f0119.pt</code></th>' in first
    assert '<nav aria-label="Pages of My files"' in first and "Page 1 of 3" in first and "Previous" not in first
    assert '<a href="/editor/files/?page=2" rel="next">' in first
    second = student_client.get("/editor/files/?page=2").content.decode()
    assert rows(second) == 50 and "Page 2 of 3" in second and '<th scope="row"><code>f0069.pt</code></th>' in second
    assert '<a href="/editor/files/?page=1" rel="prev">' in second
    assert '<a href="/editor/files/?page=3" rel="next">' in second
    last = student_client.get("/editor/files/?page=3").content.decode()
    assert rows(last) == 20 and '<th scope="row"><code>f0000.pt</code></th>' in last and 'rel="next"' not in last
    assert "120 of 1000 files" in last


@pytest.mark.parametrize("asked, shown", [("999", "Page 3 of 3"), ("abc", "Page 1 of 3"), ("-1", "Page 3 of 3"),
                                          ("0", "Page 3 of 3"), ("", "Page 1 of 3")])
def test_a_stale_or_mistyped_page_shows_the_nearest_page(student_client, student, asked, shown):
    fill(student, 120)
    answer = student_client.get(f"/editor/files/?page={asked}")
    assert answer.status_code == 200 and shown in answer.content.decode()


def test_one_page_of_files_has_no_page_links(student_client, saved):
    page = student_client.get("/editor/files/?page=7").content.decode()
    assert rows(page) == 1 and "Pages of My files" not in page
