from django.conf import settings
from django.db import models

from apps.graphs import changes
from apps.graphs.models import Graph, blank_document

STALE_EDIT = "This graph changed in another window; reload to see the current version"


class StaleEdit(Exception):
    """An edit made from an older revision touches something changed since: refused."""

    def __init__(self) -> None:
        super().__init__(STALE_EDIT)


class TabManager(models.Manager):
    """Tabs without their undo history (up to 2 x UNDO_STEPS whole documents): the Inspector
    and other readers never need it. The editor, which edits it and shows Undo / Redo, asks
    for it with ``with_history()`` in the same query."""

    def get_queryset(self) -> models.QuerySet:
        return super().get_queryset().defer("undo_stack", "redo_stack", "edit_log")

    def with_history(self) -> models.QuerySet:
        return super().get_queryset()


class Tab(models.Model):
    """An open graph in a user's editor: its document (with the tab's run settings), the
    undo history, the run it last started, and the saved graph it came from, if any."""

    UNDO_STEPS = 50
    EDIT_LOG_STEPS = 100  # an edit from a revision older than the last 100 is refused

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tabs")
    title = models.CharField(max_length=80)
    position = models.PositiveIntegerField(default=0)
    document = models.JSONField(default=blank_document)
    graph = models.ForeignKey(Graph, null=True, blank=True, on_delete=models.SET_NULL, related_name="tabs")
    last_run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    undo_stack = models.JSONField(default=list)   # [{"document": ..., "active": ...}], oldest first
    redo_stack = models.JSONField(default=list)
    active_segment = models.CharField(max_length=200, blank=True)  # the segment the Inspector shows
    revision = models.PositiveIntegerField(default=0)  # bumped by every change of the document
    edit_log = models.JSONField(default=list)  # [[revision, paths it changed]], the last EDIT_LOG_STEPS
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

    def apply(self, new_document: dict, active: str | None = None, made_from: int | None = None) -> None:
        """Replace the document (and, if given, the active segment) as one undoable step;
        an active segment the new document no longer has stops being active. An edit made
        from an older revision (``made_from``) raises StaleEdit if it touches anything changed
        since. Not saved."""
        active = self.active_segment if active is None else active
        if not any(g["id"] == active for g in new_document.get("segmentGroups", [])):
            active = ""
        if new_document == self.document and active == self.active_segment:
            return
        paths = changes.changed_paths(self.document, new_document)
        self.check_fresh(made_from, paths)
        self.undo_stack = (self.undo_stack + [self._snapshot()])[-self.UNDO_STEPS:]
        self.redo_stack = []
        self._record(paths)
        self.document, self.active_segment = new_document, active

    def undo(self, made_from: int | None = None) -> bool:
        if not self.undo_stack:
            return False
        self._step(self.undo_stack[-1], made_from)
        self.redo_stack = (self.redo_stack + [self._snapshot()])[-self.UNDO_STEPS:]
        self._restore(self.undo_stack[-1])
        self.undo_stack = self.undo_stack[:-1]
        return True

    def redo(self, made_from: int | None = None) -> bool:
        if not self.redo_stack:
            return False
        self._step(self.redo_stack[-1], made_from)
        self.undo_stack = (self.undo_stack + [self._snapshot()])[-self.UNDO_STEPS:]
        self._restore(self.redo_stack[-1])
        self.redo_stack = self.redo_stack[:-1]
        return True

    def _step(self, snapshot: dict, made_from: int | None) -> None:
        paths = changes.changed_paths(self.document, snapshot["document"])
        self.check_fresh(made_from, paths)
        self._record(paths)

    def check_fresh(self, made_from: int | None, paths: list) -> None:
        """Raise StaleEdit when an edit made from revision ``made_from`` touches a field changed
        since (or the log no longer reaches back that far). None: not checked."""
        if made_from is None or made_from == self.revision:
            return
        since = [p for revision, changed in self.edit_log if revision > made_from for p in changed]
        reaches = made_from < self.revision and bool(self.edit_log) and self.edit_log[0][0] <= made_from + 1
        if not reaches or changes.clash(paths, since):
            raise StaleEdit()

    def _record(self, paths: list) -> None:
        self.revision += 1
        self.edit_log = (self.edit_log + [[self.revision, paths]])[-self.EDIT_LOG_STEPS:]

    HISTORY_FIELDS = ["document", "undo_stack", "redo_stack", "active_segment", "revision", "edit_log"]
