"""The class in the Django admin: teachers, students inline, End class and Reopen; and the
class pages carry nothing inline (the Content-Security-Policy allows none)."""
from django.contrib.auth import get_user_model
from django.urls import reverse

from apps.accounts.models import Classroom
from tests.test_csp import inline_parts

User = get_user_model()


def test_the_admin_lists_changes_ends_and_reopens_a_class(admin_client, classroom, teacher, pupils):
    listing = admin_client.get(reverse("admin:accounts_classroom_changelist")).content.decode()
    assert "7B" in listing and "mrs-k" in listing and inline_parts(listing) == []
    change = admin_client.get(reverse("admin:accounts_classroom_change", args=[classroom.pk])).content.decode()
    assert "amir" in change and 'name="teachers"' in change and inline_parts(change) == []
    changelist = reverse("admin:accounts_classroom_changelist")
    admin_client.post(changelist, {"action": "end_classes", "_selected_action": [classroom.pk]})
    assert Classroom.objects.get(pk=classroom.pk).ended is not None
    assert not User.objects.filter(username__in=["amir", "bea"], is_active=True).exists()
    assert User.objects.get(username="mrs-k").is_active
    admin_client.post(changelist, {"action": "reopen_classes", "_selected_action": [classroom.pk]})
    assert Classroom.objects.get(pk=classroom.pk).ended is None
    assert User.objects.filter(username__in=["amir", "bea"], is_active=True).count() == 2


def test_the_class_pages_have_nothing_inline(teacher_client, classroom, pupils, client):
    pages = [teacher_client.get(reverse("classes:roster", args=[classroom.pk])),
             teacher_client.get(reverse("classes:cards", args=[classroom.pk])),
             teacher_client.post(reverse("classes:roster-add", args=[classroom.pk]), {"names": "Ada"}),
             teacher_client.post(reverse("classes:roster-add", args=[classroom.pk]), {"csv_text": "x y,Bad"})]
    for page in pages:
        assert inline_parts(page.content.decode()) == []


def test_a_student_added_to_an_ended_class_in_the_admin_cannot_log_in_either(classroom, pupils, client):
    """Item 6: however a student joins an ended class (here as the admin's inline does), they
    are locked out as its other students are; a teacher or an administrator never is."""
    from apps.accounts.models import Enrolment
    from apps.accounts.roster import end_class
    end_class(classroom)
    late = User.objects.create_user("late-kid", password="pw-late-123")
    Enrolment.objects.create(student=late, classroom=classroom)
    assert not User.objects.get(pk=late.pk).is_active
    answer = client.post(reverse("login"), {"username": "late-kid", "password": "pw-late-123"})
    assert answer.status_code == 200 and "Your class has ended" in answer.content.decode()
    staff = User.objects.create_user("helper-admin", is_staff=True)
    Enrolment.objects.create(student=staff, classroom=classroom)
    assert User.objects.get(pk=staff.pk).is_active
