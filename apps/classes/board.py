"""What the class view shows of each student, in one place: their name, the graph they are
on, their last run's status and message in words, and where a look at it starts. The page,
its live table and the JSON API all read these rows."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.db.models import OuterRef, Subquery
from django.urls import reverse

from apps.editor.models import Tab
from apps.runs import service
from apps.runs.engine import events as ev
from apps.runs.models import Run

# The filters the page offers (?show=), in the order it lists them.
FILTERS = {"all": "Everyone", "failed": "Failed runs", "not-run": "Not run yet"}

# A run's status as a teacher and a student say it.
STATUS_WORDS = {
    Run.Status.QUEUED: "Waiting to run",
    Run.Status.RUNNING: "Running",
    Run.Status.SUCCEEDED: "Worked",
    Run.Status.FAILED: "Failed",
    Run.Status.CANCELLED: "Stopped",
    Run.Status.INTERRUPTED: "Interrupted (the server restarted)",
}
NOT_RUN = "Not run yet"
FAILED_NODE = ev.NODE_ERROR.removeprefix("node_")   # a node's status in Run.nodes (recorder.Recorder)


@dataclass
class StudentRow:
    student: object
    name: str
    graph: str              # the title of the graph they are on, or ""
    run: Run | None         # their last run, as its recorder knows it now
    status: str             # the run's status in words
    message: str            # what went wrong, in the run's own words ("" when nothing did)
    when: datetime | None   # when the last run started (or was queued)
    look_url: str           # the read-only page of their graph at that run; "" when they have no graph open
    failed_node: str = ""

    @property
    def failed(self) -> bool:
        return self.run is not None and self.run.status == Run.Status.FAILED


def display_name(user) -> str:
    return user.first_name or user.get_username()


def rows(classroom, show: str = "all") -> list[StudentRow]:
    """Every student of the class (by username), as ``show`` filters them."""
    newest = Run.objects.filter(owner=OuterRef("pk")).order_by("-created").values("pk")[:1]
    students = list(get_user_model().objects.filter(enrolment__classroom=classroom)
                    .annotate(last_run_pk=Subquery(newest)).order_by("username"))
    runs = Run.objects.defer("log").in_bulk([s.last_run_pk for s in students if s.last_run_pk])
    tabs: dict[int, list[Tab]] = {}
    for tab in Tab.objects.filter(owner__in=students).defer("document", "edit_log").order_by("-pk"):
        tabs.setdefault(tab.owner_id, []).append(tab)
    found = [row(s, runs.get(s.last_run_pk), tabs.get(s.pk, [])) for s in students]
    if show == "failed":
        return [r for r in found if r.failed]
    if show == "not-run":
        return [r for r in found if r.run is None]
    return found


def row(student, run: Run | None, tabs: list[Tab]) -> StudentRow:
    run = service.current(run) if run is not None else None
    tab = tab_of(run, tabs)
    failed_node = next((node_id for node_id, node in (run.nodes if run else {}).items()
                        if node.get("status") == FAILED_NODE), "")
    return StudentRow(
        student=student, name=display_name(student),
        graph=tab.title if tab else (run.graph_name if run else ""),
        run=run, status=STATUS_WORDS.get(run.status, run.status) if run else NOT_RUN,
        message=(run.error if run else "") or "", when=(run.started or run.created) if run else None,
        look_url=look_url(tab, run if run and tab.shows(run) else None, failed_node) if tab else "",
        failed_node=failed_node)


def tab_of(run: Run | None, tabs: list[Tab]) -> Tab | None:
    """The graph a student is on: the tab their last run came from, else one that shows it,
    else their newest tab."""
    if run is not None:
        for t in tabs:
            if run.origin == t.origin or run.pk == t.last_run_id or (run.graph_id and run.graph_id == t.graph_id):
                return t
    return tabs[0] if tabs else None


def look_url(tab: Tab, run: Run | None, node: str = "") -> str:
    """The student's graph page, read-only for the teacher, at their last run and its failing node."""
    query = {k: v for k, v in (("run", str(run.id) if run else ""), ("node", node if run else "")) if v}
    return reverse("editor:tab", args=[tab.pk]) + (f"?{urlencode(query)}" if query else "")


def as_json(r: StudentRow) -> dict:
    """A row as GET /api/classes/{id} answers it."""
    run = r.run
    return {"username": r.student.get_username(), "display_name": r.name,
            "last_run": None if run is None else {
                "id": str(run.id), "status": run.status, "error": run.error or None,
                "when": r.when.isoformat() if r.when else None, "graph": r.graph}}
