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
    undo_stack = models.JSONField(default=list)
    redo_stack = models.JSONField(default=list)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "pk"]

    def __str__(self) -> str:
        return self.title

    def apply(self, new_document: dict) -> None:
        """Replace the document as one undoable step (not saved: the caller saves)."""
        if new_document == self.document:
            return
        self.undo_stack = (self.undo_stack + [self.document])[-self.UNDO_STEPS:]
        self.redo_stack = []
        self.document = new_document

    def undo(self) -> bool:
        if not self.undo_stack:
            return False
        self.redo_stack = (self.redo_stack + [self.document])[-self.UNDO_STEPS:]
        self.document = self.undo_stack[-1]
        self.undo_stack = self.undo_stack[:-1]
        return True

    def redo(self) -> bool:
        if not self.redo_stack:
            return False
        self.undo_stack = (self.undo_stack + [self.document])[-self.UNDO_STEPS:]
        self.document = self.redo_stack[-1]
        self.redo_stack = self.redo_stack[:-1]
        return True
