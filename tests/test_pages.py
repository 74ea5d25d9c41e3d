"""Pages: login required everywhere but the login page; a user sees only their own things."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from apps.graphs.models import Graph
from apps.runs.models import Run

pytestmark = pytest.mark.django_db


def test_every_page_but_login_needs_a_login(client):
    response = client.get("/")
    assert response.status_code == 302 and response.url.startswith("/login/")
    assert client.get("/login/").status_code == 200


def test_home_lists_only_my_graphs_and_runs(student_client, student, stranger, walkthrough):
    Graph.objects.create(owner=student, name="mine", document=walkthrough)
    Graph.objects.create(owner=stranger, name="theirs", document=walkthrough)
    Run.objects.create(owner=stranger, graph_name="their run")
    page = student_client.get("/").content.decode()
    assert "mine" in page and "theirs" not in page and "their run" not in page


def test_the_start_page_lists_my_open_tabs_and_is_the_editors_welcome_screen(student_client, student, stranger):
    """One start page: ``/`` and the editor with no tab open show the same screen; a student with
    a tab full of work finds it there, never "No graphs yet"."""
    from apps.editor.models import Tab
    assert "Build your first deep learning model" in student_client.get("/").content.decode()
    mine = Tab.objects.create(owner=student, title="Digit lesson")
    Tab.objects.create(owner=stranger, title="Their tab")
    page = student_client.get("/").content.decode()
    tabs = page.split('aria-label="Your open tabs"', 1)[1].split("</nav>", 1)[0]
    assert f'<a href="/editor/{mine.pk}/">Digit lesson</a>' in tabs and "Their tab" not in page
    assert "Carry on, or start something new" in page and "No graphs yet" not in page


def test_importing_a_malformed_file_says_why_and_saves_nothing(student_client):
    upload = SimpleUploadedFile("broken.json", b'{"nodes": [{"id": "a", "type": "Warp"}], "edges": []}')
    page = student_client.post("/graphs/import", {"file": upload}, follow=True).content.decode()
    assert "Unknown node type: Warp (a)" in page
    assert not Graph.objects.exists()


def test_importing_a_graph_file_stores_it(student_client, student):
    from tests.conftest import EXAMPLES
    upload = SimpleUploadedFile("walk.json", (EXAMPLES / "walkthrough.json").read_bytes())
    student_client.post("/graphs/import", {"file": upload})
    assert Graph.objects.get(owner=student).name == "Softmax walkthrough"


def test_ensureadmin_creates_one_administrator(monkeypatch, capsys):
    from codefyui import conf
    monkeypatch.setattr(conf, "ADMIN_PASSWORD", "a-long-class-password")
    call_command("ensureadmin")
    call_command("ensureadmin")
    from django.contrib.auth import get_user_model
    admin = get_user_model().objects.get(is_superuser=True)
    assert admin.check_password("a-long-class-password")
    assert "CODEFYUI_ADMIN_PASSWORD" in capsys.readouterr().out


def test_a_missing_page_says_so_plainly(student_client):
    response = student_client.get("/editor/999999/")
    assert response.status_code == 404 and "belongs to someone else" in response.content.decode()


def test_pages_carry_the_icon_so_browsers_ask_for_no_missing_favicon(client):
    from django.contrib.staticfiles import finders

    assert 'rel="icon"' in client.get("/login/").content.decode()
    assert finders.find("favicon.svg")


def test_a_failed_login_keeps_the_username_and_asks_for_the_password_again(client, student):
    page = client.post("/login/", {"username": "ada", "password": "wrong"}).content.decode()
    assert "That username and password do not match. Try again." in page
    assert 'value="ada"' in page and 'type="password" autocomplete="current-password" required autofocus' in page
