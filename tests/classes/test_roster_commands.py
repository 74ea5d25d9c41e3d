"""manage.py addclass and importroster."""
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from apps.accounts.models import Classroom
from apps.accounts.roles import classes_of, is_teacher

User = get_user_model()


def run(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_addclass_creates_the_class_and_the_teacher_and_prints_the_password_once():
    out, _ = run("addclass", "8A", "--teacher", "mr-b")
    classroom = Classroom.objects.get(name="8A")
    teacher = User.objects.get(username="mr-b")
    password = out.split("password: ")[1].split()[0]
    assert teacher.check_password(password) and is_teacher(teacher)
    assert list(classes_of(User.objects.get(pk=teacher.pk))) == [classroom]
    again, _ = run("addclass", "8A", "--teacher", "mr-b")
    assert "password:" not in again and "unchanged" in again
    assert User.objects.get(username="mr-b").check_password(password)


def test_addclass_adds_an_existing_teacher_without_touching_their_password(teacher, classroom):
    out, _ = run("addclass", "10D", "--teacher", "mrs-k")
    assert "password:" not in out
    assert set(classes_of(User.objects.get(pk=teacher.pk))) == {classroom, Classroom.objects.get(name="10D")}
    assert User.objects.get(pk=teacher.pk).check_password("pw-teach-123")


def test_importroster_prints_username_password_lines_for_the_accounts_made(classroom, tmp_path):
    (tmp_path / "7b.csv").write_text("username,display name,password\nada,Ada Lovelace\nalan,Alan Turing,turing-machine-42\n")
    out, err = run("importroster", "7B", str(tmp_path / "7b.csv"))
    lines = out.splitlines()
    assert [line.split(",")[0] for line in lines] == ["ada", "alan"]
    assert lines[1] == "alan,turing-machine-42"
    assert User.objects.get(username="ada").check_password(lines[0].split(",")[1])
    assert "Added 2 students to 7B" in err
    assert classroom.enrolments.count() == 2


def test_importroster_refuses_a_bad_file_whole(classroom, tmp_path, pupils):
    (tmp_path / "bad.csv").write_text("cy,Cy\ndan,Dan\namir,Amir Again\n")
    with pytest.raises(CommandError, match="Nothing was created. Row 3: the username 'amir' is taken."):
        run("importroster", "7B", str(tmp_path / "bad.csv"))
    assert not User.objects.filter(username__in=["cy", "dan"]).exists()
    with pytest.raises(CommandError, match="No class named"):
        run("importroster", "12Z", str(tmp_path / "bad.csv"))
