"""Who is in a class: a roster read from a CSV file or from typed names, the accounts made
from it in one step, passwords that are easy to read aloud, a password reset, and ending or
reopening a class. No HTML here: the class pages (apps/classes) and the commands
(``importroster``, ``addclass``) call these.

A roster is refused whole: every problem is named with its row, and nothing is created
unless every row is good. A generated password is returned once, to be shown once; only
its hash is stored."""
from __future__ import annotations

import csv
import io
import os
import re
import secrets
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.functions import Lower
from django.utils import timezone
from django.utils.text import slugify

from .models import Classroom, Enrolment
from .roles import enrol

MAX_ACCOUNTS = 60        # accounts one step adds
MAX_ROSTER_BYTES = 64 * 1024
USERNAME = re.compile(r"[A-Za-z0-9._-]{1,30}")
NAME_MAX = 150           # User.first_name
SHOWN_PROBLEMS = 12      # a file with more problems names the first ones and counts the rest

# Easy to read aloud and to copy from a card: lower-case syllables without l (it looks like 1
# and I), digits without 0 and 1 (they look like O and l). "bafoke-tizamu-47": about 43 bits.
CONSONANTS = "bdfghkmnprstvz"
VOWELS = "aeiou"
DIGITS = "23456789"
HEADER_WORDS = {"username", "user", "user name", "login"}


class RosterError(Exception):
    """The roster is refused; ``problems`` names each bad row (or the file's one problem)."""

    def __init__(self, problems: list[str]):
        self.problems = problems[:SHOWN_PROBLEMS]
        if len(problems) > SHOWN_PROBLEMS:
            self.problems.append(f"…and {len(problems) - SHOWN_PROBLEMS} more problems.")
        super().__init__(" ".join(self.problems))


@dataclass(frozen=True)
class Entry:
    """One student to add: ``row`` is where they are in the file (1 is its first row)."""

    row: int
    username: str
    name: str
    password: str = ""     # blank: one is generated
    derived: bool = False  # the username was made from a typed name: a taken one is bumped, not refused


@dataclass(frozen=True)
class Account:
    """A student account as it is right after creation or a reset: the password in clear,
    for the one page (or command output) that shows it."""

    user: object
    password: str


def new_password() -> str:
    """Two made-up words of three syllables and two digits, such as ``bafoke-tizamu-47``."""
    def word() -> str:
        return "".join(secrets.choice(CONSONANTS) + secrets.choice(VOWELS) for _ in range(3))
    return f"{word()}-{word()}-{secrets.choice(DIGITS)}{secrets.choice(DIGITS)}"


# -- reading a roster ---------------------------------------------------------------------------

def decode(raw: bytes) -> str:
    """An uploaded CSV's text: UTF-8 (with or without Excel's byte-order mark), else Windows'
    Western encoding, which older spreadsheets save."""
    if len(raw) > MAX_ROSTER_BYTES:
        raise RosterError([f"The file is larger than {MAX_ROSTER_BYTES // 1024} KB; a class list is much smaller."])
    if raw.startswith((b"PK\x03\x04", b"\xd0\xcf\x11\xe0")):
        raise RosterError(["This is a spreadsheet file (.xlsx, .xls or .ods), not a CSV file: in the spreadsheet, "
                           "choose Save as (or Download) and the CSV format, then upload that file."])
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):   # "Unicode text" from a spreadsheet
        return raw.decode("utf-16", errors="replace")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


def _delimiter(text: str) -> str:
    """Commas, or the semicolons some spreadsheets write, or the tabs a pasted table has."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    if "\t" in first:
        return "\t"
    return ";" if first.count(";") >= max(1, first.count(",")) else ","


def parse_csv(text: str) -> list[Entry]:
    """A CSV roster: username, display name and (optional) password on each row; a first row
    naming the columns is skipped; empty rows are ignored. RosterError names every bad row."""
    if len(text) > MAX_ROSTER_BYTES:
        raise RosterError([f"The list is longer than {MAX_ROSTER_BYTES // 1024} KB; a class list is much smaller."])
    entries, problems = [], []
    rows = csv.reader(io.StringIO(text), delimiter=_delimiter(text))
    try:
        for number, cells in enumerate(rows, start=1):
            cells = [cell.strip() for cell in cells]
            while cells and not cells[-1]:
                cells.pop()
            if not cells:
                continue
            if not entries and not problems and cells[0].lower() in HEADER_WORDS:
                continue
            if len(cells) > 3:
                problems.append(f"Row {number}: it has {len(cells)} columns; a row has a username, a display "
                                "name and, if you like, a password.")
                continue
            username, name, password = (cells + ["", ""])[:3]
            entries.append(Entry(number, username, name, password))
    except csv.Error as exc:
        raise RosterError([f"The file could not be read as CSV: {exc}."]) from None
    problems = sorted(problems + _row_problems(entries), key=_row_number)
    if problems or len(entries) > MAX_ACCOUNTS:
        raise RosterError(_count_problems(entries) + problems)
    _check_count(entries)
    return entries


def parse_names(text: str) -> list[Entry]:
    """Typed names, one a line: each a display name with a username to be made from it ("Ada
    Lovelace" is ada-lovelace; a second Ada Lovelace, in the list or in the school, is
    ada-lovelace-2: ``add_students`` picks the free one)."""
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        name = " ".join(line.split())
        if name:
            entries.append(Entry(number, _username_from(name), name, derived=True))
    problems = [f"Line {e.row}: the name {said}." for e in entries if (said := _name_problem(e.name))]
    _check_count(entries)
    if problems:
        raise RosterError(problems)
    return entries


def _name_problem(name: str) -> str | None:
    """What is wrong with a display name, worded to follow "the display name", or None."""
    if not name:
        return "is empty"
    if len(name) > NAME_MAX:
        return f"is longer than {NAME_MAX} characters"
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in name):
        return "has a character that cannot be shown (a control character)"
    return None


def _username_from(name: str) -> str:
    return slugify(name)[:26].strip("-_") or "student"


def _free(username: str, used: set[str]) -> str:
    """``username``, or it with the first free -2, -3, ... (``used`` holds lower-case names)."""
    candidate, n = username, 1
    while candidate.lower() in used:
        n += 1
        candidate = f"{username}-{n}"
    return candidate


def _count_problems(entries: list[Entry]) -> list[str]:
    if len(entries) > MAX_ACCOUNTS:
        return [f"The list has {len(entries)} students; one step adds at most {MAX_ACCOUNTS}. "
                "Split it in two and add each part."]
    return []


def _check_count(entries: list[Entry]) -> None:
    if not entries:
        raise RosterError(["The list is empty: give one student a row (username, display name)."])
    if problems := _count_problems(entries):
        raise RosterError(problems)


def _row_problems(entries: list[Entry]) -> list[str]:
    """What is wrong with each row by itself or beside the others (not yet the database)."""
    problems, first_row = [], {}
    for e in entries:
        where = f"Row {e.row}:"
        if not e.username:
            problems.append(f"{where} the username is empty.")
        elif not USERNAME.fullmatch(e.username):
            problems.append(f"{where} the username '{e.username}' may have only letters, digits and . - _ "
                            "(no spaces), at most 30 of them.")
        elif e.username.lower() in first_row:
            problems.append(f"{where} the username '{e.username}' is already on row {first_row[e.username.lower()]}.")
        else:
            first_row[e.username.lower()] = e.row
        if said := _name_problem(e.name):
            problems.append(f"{where} the display name {said}.")
        if e.password:
            try:
                validate_password(e.password, get_user_model()(username=e.username, first_name=e.name))
            except ValidationError as exc:
                problems.append(f"{where} the password is not good enough: {' '.join(exc.messages)}")
    return problems


def _row_number(problem: str) -> int:
    found = re.match(r"(?:Row|Line) (\d+):", problem)
    return int(found[1]) if found else 0


# -- making the accounts ------------------------------------------------------------------------

def _taken(usernames: list[str]) -> set[str]:
    """Which of these usernames (lower-case) an account has already, letters' case aside."""
    wanted = [u.lower() for u in usernames]
    return set(get_user_model().objects.annotate(lower=Lower("username"))
               .filter(lower__in=wanted).values_list("lower", flat=True))


def _hashed(passwords: list[str]) -> list[str]:
    """The passwords' hashes, worked out on a few threads: the hasher is slow on purpose (about
    0.4 s each) and releases the GIL, so 60 accounts take seconds, not half a minute."""
    workers = max(1, min(8, (os.cpu_count() or 2) - 1, len(passwords)))
    if workers == 1:
        return [make_password(p) for p in passwords]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="roster-hash") as pool:
        return list(pool.map(make_password, passwords))


def add_students(classroom: Classroom, entries: list[Entry]) -> list[Account]:
    """Make an account for each entry and enrol it in the class, all or nothing. A taken
    username refuses the roster (a name made from a typed name takes the next free one)."""
    if classroom.ended:
        raise RosterError([f"The class {classroom} has ended: reopen it before adding students."])
    _check_count(entries)
    taken = _taken([e.username for e in entries])
    problems, final = [], []
    for e in entries:
        if e.derived:
            username = _free(e.username, taken)
            taken.add(username.lower())
            final.append((e, username))
        elif e.username.lower() in taken:
            problems.append(f"Row {e.row}: the username '{e.username}' is taken.")
        else:
            final.append((e, e.username))
    if problems:
        raise RosterError(problems)
    passwords = [e.password or new_password() for e, _ in final]
    hashes = _hashed(passwords)
    users = get_user_model()
    accounts = []
    with transaction.atomic():
        for (e, username), password, hashed in zip(final, passwords, hashes):
            user = users(username=username, first_name=e.name, password=hashed)
            user.save()
            enrol(user, classroom)
            accounts.append(Account(user, password))
    return accounts


def reset_password(student) -> Account:
    """A new generated password for the student (their old one stops working)."""
    password = new_password()
    student.set_password(password)
    student.save(update_fields=["password"])
    return Account(student, password)


# -- ending a class -----------------------------------------------------------------------------

def _students(classroom: Classroom):
    """The class's students whose logins the class's end locks (never an administrator)."""
    return get_user_model().objects.filter(enrolment__classroom=classroom, is_staff=False, is_superuser=False)


def end_class(classroom: Classroom) -> int:
    """End the class: its students can no longer log in (open sessions end at their next
    request); their graphs, runs and files are kept. Returns how many were locked out."""
    with transaction.atomic():
        classroom.ended = classroom.ended or timezone.now()
        classroom.save(update_fields=["ended"])
        return _set_active(classroom, False)


def reopen_class(classroom: Classroom) -> int:
    """Reopen an ended class: its students log in again."""
    with transaction.atomic():
        classroom.ended = None
        classroom.save(update_fields=["ended"])
        return _set_active(classroom, True)


def _set_active(classroom: Classroom, active: bool) -> int:
    # One save per student, not a bulk update: saving forgets their API tokens in this process
    # (backends.forget_tokens), so a locked-out student's script stops at once.
    students = list(_students(classroom).exclude(is_active=active))
    for student in students:
        student.is_active = active
        student.save(update_fields=["is_active"])
    return len(students)


def class_has_ended(user) -> bool:
    """Whether this (inactive) account is locked because its class ended."""
    return Classroom.objects.filter(enrolments__student=user, ended__isnull=False).exists()


def lock_if_ended(sender, instance: Enrolment, **_) -> None:
    """A student put into an ended class by any way (the admin's inline too) cannot log in
    either, as the class's other students cannot."""
    student = instance.student
    if instance.classroom.ended and student.is_active and not (student.is_staff or student.is_superuser):
        student.is_active = False
        student.save(update_fields=["is_active"])
