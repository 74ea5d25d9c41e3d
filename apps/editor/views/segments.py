"""Compare segments: create from two nodes, remove, clear the active one, activate another."""
from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from apps.graphs import edits

from .page import apply_edit, back, get_tab


@require_POST
def segment_create(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Compare segment: exactly two selected nodes; the one further left is the head."""
    chosen = [n for n in request.POST.getlist("node") if n]
    if len(chosen) != 2 or chosen[0] == chosen[1]:
        messages.error(request, "Create segment needs exactly two selected nodes.")
        return back(request, get_tab(request, tab_id))
    return apply_edit(request, tab_id, lambda doc: edits.create_segment(doc, *chosen), new="activate", node="")


@require_POST
def segment_remove(request: HttpRequest, tab_id: int, segment_id: str) -> HttpResponse:
    return apply_edit(request, tab_id, lambda doc: edits.remove_segment(doc, segment_id))


@require_POST
def segment_clear(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Clear active: remove the highlighted segment the Inspector is showing."""
    tab = get_tab(request, tab_id)
    if not tab.active_segment:
        return back(request, tab)
    return apply_edit(request, tab_id, lambda doc: edits.remove_segment(doc, tab.active_segment))


@require_POST
def segment_activate(request: HttpRequest, tab_id: int, segment_id: str) -> HttpResponse:
    """Make another bubble the one the Inspector shows (focus only: no undo step)."""
    tab = get_tab(request, tab_id)
    if any(g["id"] == segment_id for g in tab.document.get("segmentGroups", [])):
        tab.active_segment = segment_id
        tab.save(update_fields=["active_segment"])
    return back(request, tab, node="")
