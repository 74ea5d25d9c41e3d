"""My files (apps/editor/views/files.py): a student's list, download, upload and delete, each
only ever of their own folder, within the quota, without JavaScript (links and form posts)."""
from __future__ import annotations

import html

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.runs import service
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
    assert "Space used: 2 KB of 200 MB (0%)" in page
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
