import hashlib
import secrets
import uuid

from django.conf import settings
from django.db import models


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"
        INTERRUPTED = "interrupted"

    UNFINISHED = (Status.QUEUED, Status.RUNNING)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs")
    graph = models.ForeignKey("graphs.Graph", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    graph_name = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    options = models.JSONField(default=dict)        # record, verbose, gradients, seed, deterministic, device
    device = models.CharField(max_length=32, blank=True)   # the device actually used
    error = models.TextField(blank=True)
    nodes = models.JSONField(default=dict)          # node id -> {status, error?, summary?, seconds?}
    log = models.JSONField(default=list)            # run log lines: warnings and Print output
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"Run {str(self.id)[:8]} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status not in self.UNFINISHED

    @property
    def duration(self) -> float | None:
        if self.started and self.finished:
            return (self.finished - self.started).total_seconds()
        return None


class ApiToken(models.Model):
    """A per-user API token; only its SHA-256 is stored."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_token")
    digest = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)

    @staticmethod
    def hash(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    @classmethod
    def user_for(cls, token: str):
        """The active user this token belongs to, or None."""
        try:
            found = cls.objects.select_related("user").get(digest=cls.hash(token))
        except cls.DoesNotExist:
            return None
        return found.user if found.user.is_active else None

    @classmethod
    def issue(cls, user) -> str:
        """A new token for the user, replacing any earlier one; returned once, never stored."""
        token = secrets.token_urlsafe(32)
        cls.objects.update_or_create(user=user, defaults={"digest": cls.hash(token)})
        return token
