"""A class with a teacher and two students, and a second class whose teacher is a stranger to it."""
import pytest

from apps.accounts.models import Classroom
from apps.accounts.roles import enrol, make_teacher


@pytest.fixture
def classroom(db):
    return Classroom.objects.create(name="7B")


@pytest.fixture
def teacher(django_user_model, classroom):
    user = django_user_model.objects.create_user("mrs-k", password="pw-teach-123")
    make_teacher(user, classroom)
    return user


@pytest.fixture
def pupils(django_user_model, classroom):
    users = [django_user_model.objects.create_user(name, password=f"pw-{name}-123", first_name=name.title())
             for name in ("amir", "bea")]
    for user in users:
        enrol(user, classroom)
    return users


@pytest.fixture
def other_teacher(django_user_model):
    """A teacher of another class."""
    user = django_user_model.objects.create_user("mr-x", password="pw-other-123")
    make_teacher(user, Classroom.objects.create(name="9C"))
    return user


@pytest.fixture
def teacher_client(client, teacher):
    client.force_login(teacher)
    return client
