"""python manage.py addclass NAME --teacher USERNAME: make a class and give it a teacher.

A teacher without an account gets one, and its generated password is printed once; a
teacher who has an account is only added to the class (their password is untouched)."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from apps.accounts import roster
from apps.accounts.models import Classroom
from apps.accounts.roles import make_teacher


class Command(BaseCommand):
    help = "Create the class NAME (or find it) and make USERNAME its teacher, creating that account if needed."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the class's name, such as 7B")
        parser.add_argument("--teacher", required=True, action="append", metavar="USERNAME",
                            help="the teacher's username (give --teacher again for a second teacher)")

    def handle(self, *args, name: str, teacher: list[str], **options):
        name = name.strip()
        if not name or len(name) > Classroom._meta.get_field("name").max_length:
            raise CommandError("Give the class a name of 1 to 80 characters.")
        users = get_user_model().objects
        with transaction.atomic():
            classroom, made = Classroom.objects.get_or_create(name=name)
            self.stdout.write(f"{'Created' if made else 'Found'} class {classroom} (id {classroom.pk}).")
            for username in teacher:
                user = users.filter(username=username).first()
                password = None
                if user is None:
                    if not roster.USERNAME.fullmatch(username):
                        raise CommandError(f"{username!r} is not a username: use letters, digits and . - _ only.")
                    password = roster.new_password()
                    user = users.create_user(username, password=password)
                make_teacher(user, classroom)
                if password:
                    self.stdout.write(f"Created teacher {username} with password: {password}\n"
                                      "It is shown only this once: note it now.")
                else:
                    self.stdout.write(f"{username} teaches {classroom} (their password is unchanged).")
