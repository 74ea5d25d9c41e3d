"""Reading a roster and making its accounts: a good list makes every account, a list with a
bad row is refused whole (the row named) and makes none, passwords are easy to read aloud."""
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from apps.accounts import roster
from apps.accounts.models import Enrolment

User = get_user_model()


def logs_in(client, username: str, password: str) -> bool:
    """A login through the login page (the throttling backend wants a request)."""
    return client.post(reverse("login"), {"username": username, "password": password}).status_code == 302


def refused(text: str) -> str:
    with pytest.raises(roster.RosterError) as caught:
        roster.parse_csv(text)
    return " ".join(caught.value.problems)


def test_a_password_is_easy_to_read_aloud():
    for _ in range(200):
        password = roster.new_password()
        assert not set(password) & set("0O1lI"), password
        assert len(password) == 16 and password[6] == password[13] == "-"
    assert len({roster.new_password() for _ in range(50)}) == 50


def test_a_csv_roster_reads_username_name_and_an_optional_password():
    entries = roster.parse_csv("username,display name,password\r\nada,Ada Lovelace\n\nalan , Alan Turing , turing-machine-42\n")
    assert [(e.row, e.username, e.name, e.password) for e in entries] == [
        (2, "ada", "Ada Lovelace", ""), (4, "alan", "Alan Turing", "turing-machine-42")]


def test_a_list_pasted_from_a_spreadsheet_or_with_semicolons_reads_the_same():
    assert [e.username for e in roster.parse_csv("ada\tAda Lovelace\nalan\tAlan Turing\n")] == ["ada", "alan"]
    assert [e.name for e in roster.parse_csv("ada;Lovelace, Ada\n")] == ["Lovelace, Ada"]


@pytest.mark.parametrize("text, said", [
    ("ada,Ada\nbob,\n", "Row 2: the display name is empty."),
    ("ada,Ada\n,Nobody\n", "Row 2: the username is empty."),
    ("ada,Ada\nbob,Bob\nada,Ada Again\n", "Row 3: the username 'ada' is already on row 1."),
    ("ADA,Ada\nada,Ada Again\n", "Row 2: the username 'ada' is already on row 1."),
    ("ada,Ada\nbob smith,Bob\n", "Row 2: the username 'bob smith' may have only letters"),
    ("ada,Ada\nbob,Bob,short\n", "Row 2: the password is not good enough"),
    ("ada,Ada,pw,extra\n", "Row 1: it has 4 columns"),
    ("\n\n", "The list is empty"),
])
def test_a_bad_row_is_named(text, said):
    assert said in refused(text)


def test_every_bad_row_is_named_at_once_in_row_order():
    problems = refused("username,name\nada,\n,Bea\ncy,Cy\n").split(" Row")
    assert problems == ["Row 2: the display name is empty.", " 3: the username is empty."]


def test_at_most_sixty_students_in_one_step():
    sixty = "".join(f"s{i},Student {i}\n" for i in range(60))
    assert len(roster.parse_csv(sixty)) == 60
    assert "has 61 students; one step adds at most 60" in refused(sixty + "s60,One Too Many\n")


def test_typed_names_become_usernames_made_unique(classroom):
    entries = roster.parse_names("Ada Lovelace\n\n  Zoë   Ünal \nAda Lovelace\n李雷\n")
    accounts = roster.add_students(classroom, entries)
    assert [(a.user.username, a.user.first_name) for a in accounts] == [
        ("ada-lovelace", "Ada Lovelace"), ("zoe-unal", "Zoë Ünal"), ("ada-lovelace-2", "Ada Lovelace"),
        ("student", "李雷")]


def test_a_file_in_windows_encoding_or_with_a_byte_order_mark_is_read():
    assert roster.decode("ada,Zoë\n".encode("cp1252")) == "ada,Zoë\n"
    assert roster.decode("\ufeffada,Zoë\n".encode()) == "ada,Zoë\n"
    assert roster.decode("ada\tZoë\n".encode("utf-16")) == "ada\tZoë\n"
    with pytest.raises(roster.RosterError, match="spreadsheet file"):
        roster.decode(b"PK\x03\x04 an xlsx file")


def test_adding_a_roster_makes_enrolled_accounts_that_log_in(classroom, client):
    accounts = roster.add_students(classroom, roster.parse_csv("ada,Ada Lovelace\nalan,Alan Turing,turing-machine-42\n"))
    assert [(a.user.username, a.user.first_name) for a in accounts] == [("ada", "Ada Lovelace"), ("alan", "Alan Turing")]
    assert accounts[1].password == "turing-machine-42"
    assert {e.student.username for e in Enrolment.objects.filter(classroom=classroom)} == {"ada", "alan"}
    assert User.objects.get(username="ada").groups.filter(name="Students").exists()
    assert not User.objects.filter(password=accounts[0].password).exists()   # stored hashed
    assert logs_in(client, "ada", accounts[0].password)


def test_a_taken_username_refuses_the_whole_file_and_creates_nothing(classroom, django_user_model):
    django_user_model.objects.create_user("Ada")
    entries = roster.parse_csv("bea,Bea\ncy,Cy\ndan,Dan\nada,Ada Lovelace\n")
    with pytest.raises(roster.RosterError) as caught:
        roster.add_students(classroom, entries)
    assert caught.value.problems == ["Row 4: the username 'ada' is taken."]
    assert not User.objects.filter(username__in=["bea", "cy", "dan"]).exists()
    assert not classroom.enrolments.exists()


def test_a_typed_name_whose_username_is_taken_takes_the_next_free_one(classroom, django_user_model):
    django_user_model.objects.create_user("ada-lovelace")
    accounts = roster.add_students(classroom, roster.parse_names("Ada Lovelace\nAda Lovelace"))
    assert [a.user.username for a in accounts] == ["ada-lovelace-2", "ada-lovelace-3"]


def test_a_reset_password_replaces_the_old_one(pupils, client):
    account = roster.reset_password(pupils[0])
    assert not logs_in(client, "amir", "pw-amir-123")
    assert logs_in(client, "amir", account.password)


def test_ending_a_class_locks_its_students_out_and_reopening_lets_them_in(classroom, pupils, teacher, client):
    assert roster.end_class(classroom) == 2
    classroom.refresh_from_db()
    assert classroom.ended is not None
    assert not logs_in(client, "amir", "pw-amir-123")
    assert logs_in(client, "mrs-k", "pw-teach-123")   # the teacher is no student of it
    assert roster.reopen_class(classroom) == 2
    assert logs_in(client, "amir", "pw-amir-123")


def test_an_ended_class_takes_no_new_students(classroom):
    roster.end_class(classroom)
    with pytest.raises(roster.RosterError, match="has ended"):
        roster.add_students(classroom, roster.parse_names("Ada"))


def test_a_name_with_a_control_character_is_refused():
    assert "Row 1: the display name has a character that cannot be shown" in refused("ada,Ada\x00\n")
    with pytest.raises(roster.RosterError, match="Line 2: the name has a character"):
        roster.parse_names("Ada\nB\x07ea\n")
