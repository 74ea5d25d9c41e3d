"""The roles, as Django groups (made by migration 0003): a teacher has classes, a student
has a place in one."""
from __future__ import annotations

from django.contrib.auth.models import Group, Permission

from .models import Classroom, Enrolment

TEACHERS = "Teachers"
STUDENTS = "Students"
TEACHER_PERMISSIONS = ("view_classroom", "change_classroom", "look_at_work")


def group(name: str) -> Group:
    """A role's group. Migration 0003 makes both; one made again here (after a database was
    emptied without its migrations, as a transactional test's flush does) gets the same rights."""
    found, made = Group.objects.get_or_create(name=name)
    if made and name == TEACHERS:
        found.permissions.set(Permission.objects.filter(content_type__app_label="accounts",
                                                        codename__in=TEACHER_PERMISSIONS))
    return found


def make_teacher(user, classroom: Classroom | None = None) -> None:
    user.groups.add(group(TEACHERS))
    if classroom is not None:
        classroom.teachers.add(user)


def enrol(user, classroom: Classroom) -> Enrolment:
    """Put a student in a class (moving them out of any other)."""
    user.groups.add(group(STUDENTS))
    enrolment, _ = Enrolment.objects.update_or_create(student=user, defaults={"classroom": classroom})
    return enrolment


def is_teacher(user) -> bool:
    return user.is_authenticated and user.has_perm("accounts.look_at_work")


def classes_of(user):
    """The classes whose pages this user may open: a teacher's own; every class for a superuser."""
    if not user.is_authenticated:
        return Classroom.objects.none()
    if user.is_superuser:
        return Classroom.objects.all()
    if not user.has_perm("accounts.view_classroom"):
        return Classroom.objects.none()
    return Classroom.objects.filter(teachers=user)
