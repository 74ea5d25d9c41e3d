import hashlib
import secrets

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A per-user API token; only its SHA-256 is stored."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_token")
    digest = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "runs_apitoken"  # the table it had before accounts became their own app

    @staticmethod
    def hash(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    @classmethod
    def issue(cls, user) -> str:
        """A new token for the user, replacing any earlier one; returned once, never stored."""
        token = secrets.token_urlsafe(32)
        cls.objects.update_or_create(user=user, defaults={"digest": cls.hash(token)})
        return token
