"""python manage.py issuetoken USERNAME: print a new API token (it replaces the old one)."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import ApiToken


class Command(BaseCommand):
    help = "Print a new API token for USERNAME; any earlier token of that user stops working."

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username: str, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}")
        self.stdout.write(ApiToken.issue(user))
