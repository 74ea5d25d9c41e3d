"""A class's students page, login cards, a password reset, ending a class and the zip of its
students' graphs: only for a teacher of the class (anyone else: 404; a visitor: the login page)."""
import io
import json
import zipfile

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from apps.accounts.forms import CLASS_ENDED
from apps.graphs import document
from apps.graphs.models import Graph

User = get_user_model()


def url(name: str, classroom, **more) -> str:
    return reverse(f"classes:{name}", kwargs={"class_id": classroom.pk, **more})


def test_a_teacher_sees_their_class_students_with_a_reset_button_each(teacher_client, classroom, pupils):
    page = teacher_client.get(url("roster", classroom)).content.decode()
    assert "Students of 7B" in page and "Amir" in page and "bea" in page
    assert page.count("Reset password</button>") == 2
    for label in ('for="id_names"', 'for="id_csv_text"', 'for="id_csv_file"'):
        assert label in page


@pytest.mark.parametrize("name, method", [("roster", "get"), ("roster-add", "post"), ("cards", "get"),
                                          ("end", "post"), ("reopen", "post"), ("export", "get")])
def test_another_teacher_and_a_student_get_404_and_a_visitor_the_login_page(client, classroom, pupils, other_teacher,
                                                                           name, method):
    address = url(name, classroom)
    visitor = getattr(client, method)(address)
    assert visitor.status_code == 302 and visitor["Location"].startswith(reverse("login"))
    for user in (other_teacher, pupils[0]):
        client.force_login(user)
        assert getattr(client, method)(address, {"names": "Eve"}).status_code == 404
    assert not User.objects.filter(username="eve").exists()


def test_a_superuser_opens_every_class(client, classroom, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", "", "pw-root-123"))
    assert client.get(url("cards", classroom)).status_code == 200


def test_a_reset_is_only_for_a_student_of_that_class(teacher_client, classroom, student):
    assert teacher_client.post(url("reset-password", classroom, student_id=student.pk)).status_code == 404


def test_adding_typed_names_shows_exactly_their_cards_with_passwords_once(teacher_client, classroom, pupils):
    answer = teacher_client.post(url("roster-add", classroom), {"names": "Ada Lovelace\nAlan Turing\n"})
    page = answer.content.decode()
    assert answer.status_code == 200 and "no-store" in answer["Cache-Control"]
    assert "Added 2 students to 7B" in page and page.count('class="card"') == 2
    ada = User.objects.get(username="ada-lovelace")
    password = page.split('class="card-password">')[1].split("<")[0]
    assert ada.check_password(password) and ada.first_name == "Ada Lovelace"
    assert "http://testserver/" in page and "amir" not in page
    assert password not in teacher_client.get(url("cards", classroom)).content.decode()
    assert not any(password in str(v) for v in teacher_client.session.values())


def test_pasted_and_uploaded_csv_add_students(teacher_client, classroom):
    teacher_client.post(url("roster-add", classroom), {"csv_text": "ada,Ada Lovelace\n"})
    upload = io.BytesIO("username,display name\nalan,Alan Turing\n".encode())
    upload.name = "7b.csv"
    teacher_client.post(url("roster-add", classroom), {"csv_file": upload})
    assert set(classroom.enrolments.values_list("student__username", flat=True)) == {"ada", "alan"}


def test_a_bad_list_is_refused_whole_naming_the_row_and_kept_in_the_form(teacher_client, classroom, pupils):
    answer = teacher_client.post(url("roster-add", classroom), {"csv_text": "cy,Cy\ndan,Dan\nbob,\namir,Amir\n"})
    page = answer.content.decode()
    assert answer.status_code == 400
    assert "Nothing was added" in page and "Row 3: the display name is empty." in page
    assert "cy,Cy" in page  # the list stays in its box to be fixed
    answer = teacher_client.post(url("roster-add", classroom), {"csv_text": "cy,Cy\namir,Amir\n"})
    assert "Row 2: the username &#x27;amir&#x27; is taken." in answer.content.decode()
    assert not User.objects.filter(username__in=["cy", "dan"]).exists()


def test_one_way_at_a_time(teacher_client, classroom):
    answer = teacher_client.post(url("roster-add", classroom), {"names": "Ada", "csv_text": "alan,Alan"})
    assert answer.status_code == 400 and "Use one of the three ways" in answer.content.decode()
    assert not classroom.enrolments.exists()


def test_the_plain_cards_page_has_a_line_for_the_password(teacher_client, classroom, pupils):
    page = teacher_client.get(url("cards", classroom)).content.decode()
    assert page.count('class="card"') == 2 and page.count('class="card-blank"') == 2
    assert "<code>amir</code>" in page and "<code>http://testserver/</code>" in page
    assert "Ask your teacher to reset it" in page and "<script" not in page


def test_a_reset_shows_that_students_card_with_the_new_password(teacher_client, classroom, pupils):
    answer = teacher_client.post(url("reset-password", classroom, student_id=pupils[1].pk))
    page = answer.content.decode()
    assert "New password for bea" in page and page.count('class="card"') == 1
    password = page.split('class="card-password">')[1].split("<")[0]
    assert User.objects.get(username="bea").check_password(password)
    assert "no-store" in answer["Cache-Control"]


def test_an_ended_class_locks_its_students_out_keeps_their_work_and_reopens(teacher_client, classroom, pupils, client):
    Graph.objects.create(owner=pupils[0], name="My CNN", document={"nodes": [], "edges": []})
    answer = teacher_client.post(url("end", classroom), follow=True)
    assert "has ended" in answer.content.decode()
    assert not User.objects.get(username="amir").is_active
    assert Graph.objects.filter(owner=pupils[0]).exists()
    login = Client().post(reverse("login"), {"username": "amir", "password": "pw-amir-123"})
    assert login.status_code == 200 and CLASS_ENDED in login.content.decode()
    wrong = Client().post(reverse("login"), {"username": "amir", "password": "not-it"})
    assert CLASS_ENDED not in wrong.content.decode() and "do not match" in wrong.content.decode()
    teacher_client.post(url("reopen", classroom))
    assert Client().post(reverse("login"), {"username": "amir", "password": "pw-amir-123"}).status_code == 302


def test_an_ended_class_ends_a_students_open_session(classroom, pupils, client):
    from apps.accounts.roster import end_class
    client.force_login(pupils[0])
    assert client.get(reverse("home")).status_code == 200
    end_class(classroom)
    assert client.get(reverse("home")).status_code == 302


def test_the_export_is_a_zip_of_every_students_graphs_a_folder_each(teacher_client, classroom, pupils, student,
                                                                   walkthrough):
    doc = document.normalise(walkthrough)
    first = Graph.objects.create(owner=pupils[0], name="Walk through", document=doc)
    second = Graph.objects.create(owner=pupils[0], name="Walk through", document=doc)
    unnamed = Graph.objects.create(owner=pupils[1], name="", document=doc)
    Graph.objects.create(owner=student, name="Not in this class", document=doc)
    answer = teacher_client.get(url("export", classroom))
    assert answer["Content-Type"] == "application/zip" and '"7b-graphs.zip"' in answer["Content-Disposition"]
    archive = zipfile.ZipFile(io.BytesIO(b"".join(answer.streaming_content)))
    names = sorted(archive.namelist())
    assert names == sorted(["amir/walk-through.json", f"amir/walk-through-{second.pk}.json",
                            f"bea/graph-{unnamed.pk}.json"])
    assert first.pk < second.pk
    assert document.load(archive.read("amir/walk-through.json")) == doc
    assert json.loads(archive.read(f"bea/graph-{unnamed.pk}.json"))["nodes"] == doc["nodes"]


@pytest.mark.parametrize("junk", ["\x00", "x" * 3000, "%ff", "../../etc/passwd", ",,,,\n\"unclosed", "a,b\x00,c"])
def test_junk_in_the_roster_form_is_answered_below_500(teacher_client, classroom, pupils, junk):
    for field in ("names", "csv_text"):
        assert teacher_client.post(url("roster-add", classroom), {field: junk}).status_code < 500
    upload = io.BytesIO(junk.encode())
    upload.name = "junk.csv"
    assert teacher_client.post(url("roster-add", classroom), {"csv_file": upload}).status_code < 500
    assert teacher_client.post(url("reset-password", classroom, student_id=999999)).status_code == 404
