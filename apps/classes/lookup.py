"""The one way a class page finds its class and a student in it: a class this user teaches
(every class for a superuser), else 404, never 403, so a stranger learns nothing."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from apps.accounts.models import Classroom
from apps.accounts.roles import classes_of


def class_of(request: HttpRequest, class_id: int) -> Classroom:
    return get_object_or_404(classes_of(request.user), pk=class_id)


def student_of(classroom: Classroom, student_id: int):
    student = get_user_model().objects.filter(pk=student_id, enrolment__classroom=classroom).first()
    if student is None:
        raise Http404("No such student in this class")
    return student


def students(classroom: Classroom):
    """The class's students, by username."""
    return get_user_model().objects.filter(enrolment__classroom=classroom).order_by("username")
