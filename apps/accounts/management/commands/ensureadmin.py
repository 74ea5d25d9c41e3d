"""python manage.py ensureadmin: create the first administrator when there is none.

The password comes from CODEFYUI_ADMIN_PASSWORD, or is generated and printed once.
"""
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from codefyui import conf


class Command(BaseCommand):
    help = "Create an 'admin' superuser if no superuser exists yet."

    def handle(self, *args, **options):
        users = get_user_model().objects
        if users.filter(is_superuser=True).exists():
            return
        password = conf.ADMIN_PASSWORD or secrets.token_urlsafe(12)
        users.create_superuser("admin", "", password)
        if conf.ADMIN_PASSWORD:
            self.stdout.write("Created administrator 'admin' with the password from CODEFYUI_ADMIN_PASSWORD.")
        else:
            self.stdout.write(f"Created administrator 'admin' with password: {password}\n"
                              "It is shown only this once: note it now, or change it in the admin.")
