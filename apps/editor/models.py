from django.conf import settings
from django.db import models

from apps.graphs.models import Graph, blank_document


class TabManager(models.Manager):
    """Tabs without their undo history (up to 2 x UNDO_STEPS whole documents): the Inspector
    and other readers never need it. The editor, which edits it and shows Undo / Redo, asks
    for it with ``with_history()`` in the same query."""

    def get_queryset(self) -> models.QuerySet:
        return super().get_queryset().defer("undo_stack", "redo_stack")

    def with_history(self) -> models.QuerySet:
        return super().get_queryset()


class Tab(models.Model):
    """An open graph in a user's editor: its document (with the tab's run settings), the
    undo history, the run it last started, and the saved graph it came from, if any."""

    UNDO_STEPS = 50

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tabs")
    title = models.CharField(max_length=80)
    position = models.PositiveIntegerField(default=0)
    document = models.JSONField(default=blank_document)
    graph = models.ForeignKey(Graph, null=True, blank=True, on_delete=models.SET_NULL, related_name="tabs")
    last_run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    undo_stack = models.JSONField(default=list)   # [{"document": ..., "active": ...}], oldest first
    redo_stack = models.JSONField(default=list)
    active_segment = models.CharField(max_length=200, blank=True)  # the segment the Inspector shows
    created = models.DateTimeField(auto_now_add=True)

    objects = TabManager()

    class Meta:
        db_table = "graphs_tab"  # the table it had before the editor became its own app
        ordering = ["position", "pk"]

    def __str__(self) -> str:
        return self.title

    @property
    def weights_scope(self) -> str:
        """Whose kept layers Persist weights between runs reuses: this tab's."""
        return f"tab-{self.pk}"

    def _snapshot(self) -> dict:
        return {"document": self.document, "active": self.active_segment}

    def _restore(self, snapshot: dict) -> None:
        self.document, self.active_segment = snapshot["document"], snapshot.get("active", "")

    def apply(self, new_document: dict, active: str | None = None) -> None:
        """Replace the document (and, if given, the active segment) as one undoable step;
        an active segment the new document no longer has stops being active. Not saved."""
        active = self.active_segment if active is None else active
        if not any(g["id"] == active for g in new_document.get("segmentGroups", [])):
            active = ""
        if new_document == self.document and active == self.active_segment:
            return
        self.undo_stack = (self.undo_stack + [self._snapshot()])[-self.UNDO_STEPS:]
        self.redo_stack = []
        self.document, self.active_segment = new_document, active

    def undo(self) -> bool:
        if not self.undo_stack:
            return False
        self.redo_stack = (self.redo_stack + [self._snapshot()])[-self.UNDO_STEPS:]
        self._restore(self.undo_stack[-1])
        self.undo_stack = self.undo_stack[:-1]
        return True

    def redo(self) -> bool:
        if not self.redo_stack:
            return False
        self.undo_stack = (self.undo_stack + [self._snapshot()])[-self.UNDO_STEPS:]
        self._restore(self.redo_stack[-1])
        self.redo_stack = self.redo_stack[:-1]
        return True

    HISTORY_FIELDS = ["document", "undo_stack", "redo_stack", "active_segment"]
