"""The class view: every student, the graph they are on, their last run in words; filters
that work without JavaScript; the same rows in the JSON API; only the class's teachers see it."""
import pytest
from django.urls import reverse

from apps.accounts.models import ApiToken
from apps.editor.models import Tab
from apps.runs.models import Run


@pytest.fixture
def lesson(pupils):
    """amir's run failed on his tab "Lesson 1"; bea has not run anything."""
    amir, _bea = pupils
    tab = Tab.objects.create(owner=amir, title="Lesson 1")
    run = Run.objects.create(owner=amir, status=Run.Status.FAILED, origin=tab.origin, graph_name="Lesson 1",
                             error="Softmax failed: the shapes do not match",
                             nodes={"softmax": {"status": "error", "error": "the shapes do not match"}})
    return tab, run


def test_the_class_view_lists_every_student_with_their_last_run(teacher_client, classroom, lesson):
    tab, run = lesson
    page = teacher_client.get(reverse("classes:class", args=[classroom.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "Amir" in html and "Bea" in html and "Lesson 1" in html
    assert "Failed" in html and "the shapes do not match" in html and "Not run yet" in html
    assert f"/editor/{tab.pk}/?run={run.pk}&amp;node=softmax" in html   # the look opens the failing node
    assert 'http-equiv="refresh"' in html and "ws-connect=\"/ws/classes/" in html


def test_the_filters_show_failed_runs_and_students_who_have_not_run(teacher_client, classroom, lesson):
    url = reverse("classes:class", args=[classroom.pk])
    failed = teacher_client.get(url, {"show": "failed"}).content.decode()
    assert "Amir" in failed and "Bea" not in failed
    not_run = teacher_client.get(url, {"show": "not-run"}).content.decode()
    assert "Bea" in not_run and "Amir" not in not_run
    assert "Amir" in teacher_client.get(url, {"show": "junk"}).content.decode()   # junk: everyone


def test_the_table_alone_is_what_the_live_page_fetches(teacher_client, classroom, lesson):
    html = teacher_client.get(reverse("classes:table", args=[classroom.pk])).content.decode()
    assert html.lstrip().startswith('<div id="class-table"') and "Amir" in html and "<html" not in html


def test_another_teacher_and_a_student_get_404(client, classroom, other_teacher, pupils, lesson):
    for user in (other_teacher, pupils[0]):
        client.force_login(user)
        assert client.get(reverse("classes:class", args=[classroom.pk])).status_code == 404
        assert client.get(reverse("classes:table", args=[classroom.pk])).status_code == 404
    assert client.get(reverse("classes:index")).status_code == 404   # a student has no class pages


def test_a_teacher_lists_their_classes_and_the_header_links_there(teacher_client, classroom, client, pupils):
    page = teacher_client.get(reverse("classes:index")).content.decode()
    assert "7B" in page and "9C" not in page and 'href="/classes/"' in page
    client.force_login(pupils[0])
    assert 'href="/classes/"' not in client.get(reverse("editor:index"), follow=True).content.decode()


def test_the_api_gives_a_teacher_their_classes_and_students(client, teacher, classroom, other_teacher, lesson):
    _tab, run = lesson
    auth = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(teacher)}"}
    assert client.get("/api/classes", **auth).json() == [{"id": classroom.pk, "name": "7B"}]
    body = client.get(f"/api/classes/{classroom.pk}", **auth).json()
    amir, bea = body["students"]
    assert amir["username"] == "amir" and amir["display_name"] == "Amir"
    assert amir["last_run"]["id"] == str(run.pk) and amir["last_run"]["status"] == "failed"
    assert amir["last_run"]["error"].startswith("Softmax failed") and amir["last_run"]["graph"] == "Lesson 1"
    assert amir["last_run"]["when"]
    assert bea == {"username": "bea", "display_name": "Bea", "last_run": None}
    other = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(other_teacher)}"}
    assert client.get(f"/api/classes/{classroom.pk}", **other).status_code == 404
    assert client.get("/api/classes").status_code == 401
