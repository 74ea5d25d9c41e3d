"""Runs: start one from a tab; Stop, Delete and Inspect from the Runs panel."""
from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.runs import service
from apps.runs.models import Run
from codefyui.access import get_visible, visible_to

from .. import workspace
from ..context import is_look, runs_panel
from ..models import Tab
from ..prefs import Prefs
from ..state import NODE_VIEW, PageState
from .page import back, get_tab, posted_tab, read_tab

STILL_RUNNING = "This tab's run is still going: stop it with Stop, or wait until it ends, then run again."
RUN_WITHOUT_TAB = ("That run was started in a tab that is closed now, and its graph was never saved, so it "
                   "cannot be shown on another graph. Its log and status stay in the Runs panel.")


@require_POST
def run(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Start the tab's graph; refused while the tab's own run is still going (a second click
    before the page showed Stop), so quick clicks never start several runs."""
    tab = get_tab(request, tab_id)
    if tab.last_run is not None and not service.current(tab.last_run).is_finished:
        messages.info(request, STILL_RUNNING)
        return back(request, tab, run=str(tab.last_run_id))
    device = request.POST.get("device", "follow")
    overrides = {"device": Prefs.from_request(request).device if device == "follow" else device}
    try:
        started = service.start_run(request.user, tab.document, graph=tab.graph, overrides=overrides,
                                    weights_scope=tab.weights_scope, origin=tab.origin)
    except service.RunRefused as exc:
        for problem in exc.problems:
            messages.error(request, problem)
        return back(request, tab)
    tab.last_run = started
    tab.save(update_fields=["last_run"])
    # A new run opens on the Inspector, but a tab of it the student chose (Training's live
    # curve, Backward) stays chosen.
    chosen = PageState.posted(request).view
    return back(request, tab, run=str(started.id), view="" if chosen == NODE_VIEW else chosen)


@require_GET
def runs_body(request: HttpRequest, tab_id: int) -> HttpResponse:
    """The Runs panel's rows, fetched when it opens after an htmx re-render of the editor
    (``context.runs_panel``); its forms carry the page's state, which the fetch's query is."""
    tab = read_tab(request, tab_id)   # a stranger's tab: 404 before any run is read
    look = is_look(request, tab)
    return render(request, "editor/_runs_body.html", {**runs_panel(request, owner=tab.owner if look else None),
                                                      "tab": tab, "state": PageState.of(request), "read_only": look})


def _run_action(request: HttpRequest, run_id: UUID, action) -> HttpResponse:
    """Stop or Delete from the Runs panel; a run in the wrong state says why."""
    try:
        action(get_visible(Run.objects, request.user, run_id))
    except service.RunConflict as exc:
        messages.info(request, str(exc))
    return back(request, posted_tab(request))


@require_POST
def run_stop(request: HttpRequest, run_id: UUID) -> HttpResponse:
    return _run_action(request, run_id, service.cancel_run)


@require_POST
def run_delete(request: HttpRequest, run_id: UUID) -> HttpResponse:
    return _run_action(request, run_id, service.delete_run)


@require_POST
def run_open(request: HttpRequest, run_id: UUID) -> HttpResponse:
    """Inspect a run on the tab it belongs to (``Tab.shows``): the tab it was started from, else
    a tab of its saved graph, else a new tab of that graph. A run of a closed tab whose graph
    was never saved is shown on no other graph: the student is told so."""
    target = get_visible(Run.objects, request.user, run_id)
    posted = posted_tab(request)
    tab = posted if posted is not None and posted.shows(target) else _tab_of(request.user, target)
    if tab is None and target.graph_id:
        try:
            tab = workspace.new_tab(request.user, target.graph.document, title=target.graph.name, graph=target.graph)
        except workspace.TabQuotaFull as exc:
            messages.error(request, str(exc))
    elif tab is None:
        messages.error(request, RUN_WITHOUT_TAB)
    if tab is None:
        return back(request, posted) if posted else redirect("editor:index")
    # The tab keeps its own latest run (last_run), so the Inspector can offer the way back to it.
    return redirect(PageState(run=str(target.id)).url(reverse("editor:tab", args=[tab.pk])))


def _tab_of(user, run: Run) -> Tab | None:
    """An open tab of the student's that shows this run: the one it was started from, else one of its graph."""
    mine, tab_id = visible_to(Tab.objects, user), run.origin.removeprefix("tab:")
    started_in = mine.filter(pk=tab_id).first() if tab_id.isdigit() else None
    if started_in is not None and started_in.shows(run):
        return started_in
    return mine.filter(graph_id=run.graph_id).first() if run.graph_id else None
