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


class Classroom(models.Model):
    """A class: its teachers and its students. A student is in one class at most (the capture
    store's share and the class view count each run once). Ending a class locks its students
    out and keeps their work."""

    name = models.CharField(max_length=80, unique=True)
    teachers = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="classes_taught", blank=True)
    ended = models.DateTimeField(null=True, blank=True, help_text="When the class ended; its students cannot log in.")
    store_mb = models.PositiveIntegerField(
        null=True, blank=True, verbose_name="Capture store share (MB)",
        help_text="Space this class's runs may keep; empty: CODEFYUI_CLASS_STORE_SHARE of the store.")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        permissions = [("look_at_work", "Can look at the work of their classes' students")]

    def __str__(self) -> str:
        return self.name


class Enrolment(models.Model):
    """A student's place in a class."""

    student = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrolment")
    classroom = models.ForeignKey(Classroom, on_delete=models.CASCADE, related_name="enrolments")
    joined = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["student__username"]

    def __str__(self) -> str:
        return f"{self.student} in {self.classroom}"
