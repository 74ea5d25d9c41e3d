from django.conf import settings
from django.db import models


class Graph(models.Model):
    """A user's saved graph: one CodefyUI-compatible document."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="graphs")
    name = models.CharField(max_length=200, blank=True)
    document = models.JSONField()
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated"]

    def __str__(self) -> str:
        return self.name or f"Graph {self.pk}"


def blank_document() -> dict:
    return {"name": "", "description": "", "nodes": [], "edges": [], "segmentGroups": [],
            "settings": {"record_outputs": True}}
