"""python manage.py importroster CLASS FILE.csv: add a class's students from a CSV file.

Each row: username, display name and, if you like, a password (a first row naming the
columns is skipped). A file with a bad row is refused whole and nothing is created. Prints
``username,password`` for each account created: the only time the passwords are shown."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.accounts import roster
from apps.accounts.models import Classroom


class Command(BaseCommand):
    help = "Create and enrol the students listed in FILE.csv in CLASS; print username,password lines."

    def add_arguments(self, parser):
        parser.add_argument("classroom", metavar="CLASS", help="the class's name or id")
        parser.add_argument("file", metavar="FILE.csv", type=Path)

    def handle(self, *args, classroom: str, file: Path, **options):
        found = Classroom.objects.filter(name=classroom).first()
        if found is None and classroom.isdigit():
            found = Classroom.objects.filter(pk=int(classroom)).first()
        if found is None:
            raise CommandError(f"No class named {classroom!r} (make it with: manage.py addclass).")
        try:
            raw = file.read_bytes()
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror}.") from None
        try:
            accounts = roster.add_students(found, roster.parse_csv(roster.decode(raw)))
        except roster.RosterError as exc:
            raise CommandError("Nothing was created. " + " ".join(exc.problems)) from None
        for account in accounts:
            self.stdout.write(f"{account.user.get_username()},{account.password}")
        self.stderr.write(f"Added {len(accounts)} students to {found}.")
