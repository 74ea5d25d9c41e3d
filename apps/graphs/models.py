from django.conf import settings
from django.db import models

from codefyui import conf

from .nodes.packs import installed


class GraphQuotaFull(Exception):
    """The student keeps as many saved graphs as one may (CODEFYUI_MAX_GRAPHS_PER_USER)."""


class GraphManager(models.Manager):
    def create_owned(self, owner, name: str, document: dict) -> "Graph":
        """A new saved graph of ``owner``'s, or GraphQuotaFull saying what to do."""
        limit = conf.MAX_GRAPHS_PER_USER
        if self.filter(owner=owner).count() >= limit:
            raise GraphQuotaFull(f"You already keep {limit} saved graphs, the most one student may keep "
                                 "(CODEFYUI_MAX_GRAPHS_PER_USER). Delete a graph you no longer need, then save again.")
        return self.create(owner=owner, name=name[:200], document=document)


class Graph(models.Model):
    """A user's saved graph: one CodefyUI-compatible document."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="graphs")
    name = models.CharField(max_length=200, blank=True)
    document = models.JSONField()
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = GraphManager()

    class Meta:
        ordering = ["-updated"]

    def __str__(self) -> str:
        return self.name or f"Graph {self.pk}"


def blank_document() -> dict:
    return {"name": "", "description": "", "nodes": [], "edges": [], "segmentGroups": [],
            "settings": {"record_outputs": True}}


class PackSwitch(models.Model):
    """Whether an installed pack is on for this server. A pack without a row is on; the
    administrator switches one off in the Django admin or the Package Center."""

    name = models.CharField(max_length=100, unique=True)
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "pack switches"

    def __str__(self) -> str:
        return f"{self.name} ({'enabled' if self.enabled else 'disabled'})"

    @classmethod
    def enabled_packs(cls) -> frozenset[str]:
        """The installed packs students may use now."""
        off = set(cls.objects.filter(enabled=False).values_list("name", flat=True))
        return frozenset(name for name in installed() if name not in off)

    @classmethod
    def for_installed(cls) -> list["PackSwitch"]:
        """A row for every installed pack (made on first sight, on), in name order."""
        cls.objects.bulk_create([cls(name=name) for name in installed()], ignore_conflicts=True)
        return list(cls.objects.filter(name__in=installed()))

    @classmethod
    def switch(cls, name: str, enabled: bool) -> None:
        cls.objects.update_or_create(name=name, defaults={"enabled": enabled})
