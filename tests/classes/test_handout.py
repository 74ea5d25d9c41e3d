"""Hand out a lesson: every student of the class gets their own copy as a tab, with the
teacher's settings; the teacher's later edits do not reach it; Reset is one undoable step."""
from __future__ import annotations

import pytest
from django.urls import reverse

from apps.accounts.models import Classroom
from apps.accounts.roles import enrol
from apps.classes.models import Handout, HandoutCopy
from apps.editor.models import Tab
from apps.graphs import document
from apps.graphs.models import Graph
from codefyui import conf

pytestmark = pytest.mark.django_db


def hand_out(client, classroom, source, title=""):
    return client.post(reverse("classes:handout", args=[classroom.pk]), {"source": source, "title": title})


def copies(pupils):
    return [Tab.objects.get(owner=p) for p in pupils]


def test_a_shipped_lesson_becomes_a_tab_of_every_student(teacher_client, classroom, pupils, walkthrough):
    answer = hand_out(teacher_client, classroom, "lesson:walkthrough")
    assert answer.status_code == 302
    lesson = document.normalise(walkthrough)
    for tab in copies(pupils):
        assert tab.title == lesson["name"] and tab.document == lesson
    handout = Handout.objects.get()
    assert handout.classroom == classroom and handout.copies.count() == 2


def test_an_own_graph_goes_out_with_the_teachers_settings_and_later_edits_stay_home(
        teacher_client, teacher, classroom, pupils, walkthrough):
    doc = document.normalise(walkthrough)
    doc["settings"].update(seed="7", record_outputs=False, capture_gradients=True)
    graph = Graph.objects.create_owned(teacher, "My softmax", doc)
    hand_out(teacher_client, classroom, f"graph:{graph.pk}", title="Lesson 3: softmax")
    graph.document["nodes"] = []
    graph.document["settings"]["seed"] = "99"
    graph.save()
    for tab in copies(pupils):
        assert tab.title == "Lesson 3: softmax"
        assert tab.document["settings"]["seed"] == "7" and tab.document["settings"]["record_outputs"] is False
        assert tab.document["settings"]["capture_gradients"] is True and tab.document["nodes"]


def test_reset_puts_the_handed_out_version_back_and_undo_brings_the_work_back(
        teacher_client, client, classroom, pupils, walkthrough):
    hand_out(teacher_client, classroom, "lesson:walkthrough")
    amir = pupils[0]
    tab = Tab.objects.with_history().get(owner=amir)
    worked = {**tab.document, "nodes": tab.document["nodes"][:1], "edges": []}
    tab.apply(worked)
    client.force_login(amir)
    page = client.get(reverse("editor:tab", args=[tab.pk]))
    assert "Reset to the handed-out version" in page.content.decode()
    assert client.post(reverse("classes:handout-reset", args=[tab.pk])).status_code == 302
    tab.refresh_from_db()
    assert tab.document == document.normalise(walkthrough)
    client.post(reverse("editor:undo", args=[tab.pk]))
    tab.refresh_from_db()
    assert tab.document == worked


def test_reset_is_offered_only_on_a_handed_out_copy(client, student):
    tab = Tab.objects.create(owner=student, title="Mine")
    client.force_login(student)
    assert "Reset to the handed-out version" not in client.get(reverse("editor:tab", args=[tab.pk])).content.decode()
    assert client.post(reverse("classes:handout-reset", args=[tab.pk])).status_code == 404


def test_nobody_resets_another_students_copy(teacher_client, client, classroom, pupils):
    hand_out(teacher_client, classroom, "lesson:walkthrough")
    amirs = Tab.objects.get(owner=pupils[0])
    client.force_login(pupils[1])
    assert client.post(reverse("classes:handout-reset", args=[amirs.pk])).status_code == 404


def test_another_teacher_and_a_student_get_404(client, classroom, pupils, other_teacher):
    for user in (other_teacher, pupils[0]):
        client.force_login(user)
        assert client.get(reverse("classes:handout", args=[classroom.pk])).status_code == 404
        assert hand_out(client, classroom, "lesson:walkthrough").status_code == 404
    assert not Handout.objects.exists()


def test_another_teachers_graph_cannot_be_handed_out(teacher_client, classroom, pupils, other_teacher):
    theirs = Graph.objects.create_owned(other_teacher, "Theirs", document.normalise({"nodes": [], "edges": []}))
    answer = hand_out(teacher_client, classroom, f"graph:{theirs.pk}")
    assert answer.status_code == 400 and not Tab.objects.filter(owner__in=pupils).exists()


def test_the_page_lists_lessons_and_own_graphs(teacher_client, teacher, classroom):
    Graph.objects.create_owned(teacher, "My own CNN", document.normalise({"nodes": [], "edges": []}))
    page = teacher_client.get(reverse("classes:handout", args=[classroom.pk])).content.decode()
    assert 'value="lesson:walkthrough"' in page and "My own CNN" in page
    assert '<label for="id_source">' in page and '<label for="id_title">' in page


def test_thirty_students_take_a_fixed_number_of_queries(
        teacher_client, classroom, django_user_model, django_assert_max_num_queries):
    for i in range(30):
        enrol(django_user_model.objects.create_user(f"s{i:02}"), classroom)
    with django_assert_max_num_queries(20):
        hand_out(teacher_client, classroom, "lesson:walkthrough")
    assert Tab.objects.filter(owner__enrolment__classroom=classroom).count() == 30


def test_a_student_whose_tabs_are_full_is_named_and_gets_it_later(
        teacher_client, classroom, pupils, monkeypatch):
    monkeypatch.setattr(conf, "MAX_TABS_PER_USER", 1)
    amir, bea = pupils
    Tab.objects.create(owner=amir, title="Busy")
    answer = hand_out(teacher_client, classroom, "lesson:walkthrough")
    assert "No copy for amir" in teacher_client.get(answer.url).content.decode()
    assert Tab.objects.filter(owner=bea).count() == 1 and Tab.objects.filter(owner=amir).count() == 1
    Tab.objects.filter(owner=amir).delete()
    teacher_client.post(reverse("classes:handout-again", args=[classroom.pk, Handout.objects.get().pk]))
    assert Tab.objects.filter(owner=amir).count() == 1 and HandoutCopy.objects.count() == 2


def test_a_student_who_joins_later_gets_the_recent_handouts(teacher_client, classroom, pupils, django_user_model):
    hand_out(teacher_client, classroom, "lesson:walkthrough", title="Today")
    cleo = django_user_model.objects.create_user("cleo")
    enrol(cleo, classroom)
    assert list(Tab.objects.filter(owner=cleo).values_list("title", flat=True)) == ["Today"]
    enrol(cleo, classroom)   # enrolled again: no second copy
    assert Tab.objects.filter(owner=cleo).count() == 1


def test_the_copy_is_the_last_tab_of_the_student(teacher_client, classroom, pupils):
    Tab.objects.create(owner=pupils[0], title="Earlier", position=4)
    hand_out(teacher_client, classroom, "lesson:walkthrough", title="New")
    assert list(Tab.objects.filter(owner=pupils[0]).values_list("title", flat=True)) == ["Earlier", "New"]


def test_a_class_without_the_teacher_is_404_even_for_a_handout_id(teacher_client, other_teacher):
    other = Classroom.objects.get(name="9C")
    assert teacher_client.post(reverse("classes:handout-again", args=[other.pk, 1])).status_code == 404


def test_the_admin_shows_each_hand_out_and_its_copies_read_only(teacher_client, admin_client, classroom, pupils):
    hand_out(teacher_client, classroom, "lesson:walkthrough")
    handout = Handout.objects.get()
    listing = admin_client.get(reverse("admin:classes_handout_changelist")).content.decode()
    assert "Softmax walkthrough" in listing and "7B" in listing
    change = admin_client.get(reverse("admin:classes_handout_change", args=[handout.pk])).content.decode()
    assert "amir" in change and "bea" in change and 'name="title"' in change
    assert admin_client.get(reverse("admin:classes_handout_add")).status_code == 403
