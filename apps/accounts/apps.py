from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "accounts"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from . import checks  # noqa: F401  (registers them)
        from .models import Enrolment
        from .roster import lock_if_ended
        post_save.connect(lock_if_ended, sender=Enrolment, dispatch_uid="accounts.lock_if_ended")
