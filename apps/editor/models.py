import json
import zlib

from django.conf import settings
from django.db import models

from apps.graphs import changes
from apps.graphs.models import Graph, blank_document
from codefyui import conf

STALE_EDIT = "This graph changed in another window; reload to see the current version"


class StaleEdit(Exception):
    """An edit made from an older revision touches something changed since: refused."""

    def __init__(self) -> None:
        super().__init__(STALE_EDIT)


class TabManager(models.Manager):
    """Tabs without their edit log: the Inspector and other readers never need it. The
    editor, which checks an edit against it, asks for it with ``with_history()``."""

    def get_queryset(self) -> models.QuerySet:
        return super().get_queryset().defer("edit_log")

    def with_history(self) -> models.QuerySet:
        return super().get_queryset()


class Tab(models.Model):
    """An open graph in a user's editor: its document (with the tab's run settings), its
    revision, the run it last started, and the saved graph it came from, if any. Its Undo /
    Redo steps are HistoryStep rows, so an edit writes one step whatever the history holds."""

    UNDO_STEPS = 50
    EDIT_LOG_STEPS = 100  # an edit from a revision older than the last 100 is refused

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tabs")
    title = models.CharField(max_length=80)
    position = models.PositiveIntegerField(default=0)
    document = models.JSONField(default=blank_document)
    graph = models.ForeignKey(Graph, null=True, blank=True, on_delete=models.SET_NULL, related_name="tabs")
    last_run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
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

    @property
    def origin(self) -> str:
        """What a run started here records as where it came from (``Run.origin``)."""
        return f"tab:{self.pk}"

    def shows(self, run) -> bool:
        """Whether the Inspector may paint this run on this tab's graph: a run started here, or
        one of its saved graph's. A run that names neither a tab nor a graph (a bare document
        through the API or the CLI) may be shown anywhere; any other ran another graph."""
        if run.pk == self.last_run_id or run.origin == self.origin:
            return True
        if run.graph_id is not None:
            return run.graph_id == self.graph_id
        return not run.origin

    def can(self, kind: str) -> bool:
        """Whether there is a step to undo (HistoryStep.UNDO) or redo (HistoryStep.REDO)."""
        return self.history.filter(kind=kind).exists()

    def apply(self, new_document: dict, active: str | None = None, made_from: int | None = None) -> None:
        """Replace the document (and, if given, the active segment) as one undoable step, and
        save; an active segment the new document no longer has stops being active. An edit
        made from an older revision (``made_from``) raises StaleEdit, changing nothing, if it
        touches anything changed since."""
        active = self.active_segment if active is None else active
        if not any(g["id"] == active for g in new_document.get("segmentGroups", [])):
            active = ""
        if new_document == self.document and active == self.active_segment:
            return
        self._change(new_document, active, made_from)
        self.history.filter(kind=HistoryStep.REDO).delete()

    def undo(self, made_from: int | None = None) -> bool:
        return self._step(HistoryStep.UNDO, HistoryStep.REDO, made_from)

    def redo(self, made_from: int | None = None) -> bool:
        return self._step(HistoryStep.REDO, HistoryStep.UNDO, made_from)

    def _step(self, kind: str, opposite: str, made_from: int | None) -> bool:
        """Go back (or forward) one step: the current state becomes a step of the other kind."""
        step = self.history.filter(kind=kind).order_by("-pk").first()
        if step is None:
            return False
        document, active = step.state()
        self._change(document, active, made_from, push=opposite)
        step.delete()
        return True

    def _change(self, document: dict, active: str, made_from: int | None, push: str = "") -> None:
        paths = changes.changed_paths(self.document, document)
        self.check_fresh(made_from, paths)
        HistoryStep.push(self, push or HistoryStep.UNDO)
        self.revision += 1
        self.edit_log = (self.edit_log + [[self.revision, paths]])[-self.EDIT_LOG_STEPS:]
        self.document, self.active_segment = document, active
        self.save(update_fields=["document", "active_segment", "revision", "edit_log"])

    def check_fresh(self, made_from: int | None, paths: list) -> None:
        """Raise StaleEdit when an edit made from revision ``made_from`` touches a field changed
        since (or the log no longer reaches back that far). None: not checked."""
        if made_from is None or made_from == self.revision:
            return
        since = [p for revision, changed in self.edit_log if revision > made_from for p in changed]
        reaches = made_from < self.revision and bool(self.edit_log) and self.edit_log[0][0] <= made_from + 1
        if not reaches or changes.clash(paths, since):
            raise StaleEdit()


class HistoryStep(models.Model):
    """One Undo or Redo step of a tab: its document and active segment as they were, as
    zlib-compressed JSON. A tab keeps at most Tab.UNDO_STEPS steps of each kind and
    ``CODEFYUI_UNDO_MAX_MB`` of them in all, dropping the oldest first."""

    UNDO, REDO = "undo", "redo"

    tab = models.ForeignKey(Tab, on_delete=models.CASCADE, related_name="history")
    kind = models.CharField(max_length=4, choices=[(UNDO, "Undo"), (REDO, "Redo")])
    snapshot = models.BinaryField()
    size = models.PositiveIntegerField()  # len(snapshot), so trimming never reads a snapshot

    class Meta:
        indexes = [models.Index(fields=["tab", "kind"])]

    @classmethod
    def push(cls, tab: Tab, kind: str) -> None:
        """Keep the tab's current state as a step of this kind, then trim the history."""
        data = zlib.compress(json.dumps({"document": tab.document, "active": tab.active_segment}).encode(), 1)
        cls.objects.create(tab=tab, kind=kind, snapshot=data, size=len(data))
        budget, kept, total, drop = conf.UNDO_MAX_MB * 2**20, {cls.UNDO: 0, cls.REDO: 0}, 0, []
        for pk, step_kind, size in tab.history.order_by("-pk").values_list("pk", "kind", "size"):
            kept[step_kind] += 1
            total += size
            if kept[step_kind] > Tab.UNDO_STEPS or total > budget:
                drop.append(pk)
        if drop:
            cls.objects.filter(pk__in=drop).delete()

    def state(self) -> tuple[dict, str]:
        saved = json.loads(zlib.decompress(bytes(self.snapshot)))
        return saved["document"], saved.get("active", "")
