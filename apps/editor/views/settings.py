"""The Settings popover: the tab's run settings, this browser's preferences, and Reset all
weights."""
from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from apps.graphs import document, edits
from apps.runs import service

from .. import workspace
from ..prefs import Prefs
from .page import apply_edit, back, get_tab


@require_POST
def tab_settings(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Recording & Inspection and Training Behavior: saved with the tab's graph."""
    def change(doc):
        try:
            return workspace.with_tab_settings(doc, request.POST)
        except document.DocumentError as exc:
            raise edits.EditError("; ".join(exc.problems)) from None
    return apply_edit(request, tab_id, change)


@require_POST
def prefs(request: HttpRequest) -> HttpResponse:
    """Compute device and the Editor rows: kept by this browser in a cookie."""
    old = Prefs.from_request(request)
    new = old.updated(request.POST)
    tab_id = request.POST.get("_tab")
    tab = get_tab(request, tab_id) if tab_id else None
    if new.grid_snap and not old.grid_snap and tab is not None:  # turning it on snaps what is there
        response = apply_edit(request, tab_id, edits.snap_all)
    else:
        response = back(request, tab)
    new.save(response)
    return response


@require_POST
def weights_reset(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Reset all weights now: asks first, then drops every kept layer of this tab."""
    tab = get_tab(request, tab_id)
    if request.POST.get("confirm") != "yes":
        messages.warning(request, "Reset all persisted weights for this graph?")
        return back(request, tab, confirm_reset="1")
    messages.success(request, f"Persisted weights cleared ({service.reset_weights(tab.weights_scope)})")
    return back(request, tab)
