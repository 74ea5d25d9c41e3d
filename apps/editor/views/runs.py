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

from ..context import runs_panel
from ..models import Tab
from ..prefs import Prefs
from ..state import PageState
from .page import back, get_tab, posted_tab


@require_POST
def run(request: HttpRequest, tab_id: int) -> HttpResponse:
    tab = get_tab(request, tab_id)
    device = request.POST.get("device", "follow")
    overrides = {"device": Prefs.from_request(request).device if device == "follow" else device}
    try:
        started = service.start_run(request.user, tab.document, graph=tab.graph, overrides=overrides,
                                    weights_scope=tab.weights_scope)
    except service.RunRefused as exc:
        for problem in exc.problems:
            messages.error(request, problem)
        return back(request, tab)
    tab.last_run = started
    tab.save(update_fields=["last_run"])
    return back(request, tab, run=str(started.id), view="")  # a new run opens on the Inspector


@require_GET
def runs_body(request: HttpRequest, tab_id: int) -> HttpResponse:
    """The Runs panel's rows, fetched when it opens after an htmx re-render of the editor
    (``context.runs_panel``); its forms carry the page's state, which the fetch's query is."""
    tab = get_tab(request, tab_id)   # a stranger's tab: 404 before any run is read
    return render(request, "editor/_runs_body.html", {**runs_panel(request), "tab": tab, "state": PageState.of(request)})


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
    """Inspect a finished run in its graph's tab (opening one if none shows that graph)."""
    target = get_visible(Run.objects, request.user, run_id)
    tab = visible_to(Tab.objects, request.user).filter(graph=target.graph).first() if target.graph else None
    tab = tab or posted_tab(request)
    if tab is None:
        messages.error(request, "Open a tab first.")
        return redirect("editor:index")
    # The tab keeps its own latest run (last_run), so the Inspector can offer the way back to it.
    return redirect(PageState(run=str(target.id)).url(reverse("editor:tab", args=[tab.pk])))
