"""Edges: connect two ports (or unwire an input), delete a connection."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from apps.graphs import document, edits

from .page import apply_edit


@require_POST
def connect(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Wire source.port -> target.port; ``source`` may be 'node::port' (the no-JS select)."""
    post = request.POST
    source, source_port = post.get("source", ""), post.get("source_port", "")
    if "::" in source:
        source, source_port = source.split("::", 1)
    target, target_port = post.get("target", ""), post.get("target_port", "")
    if not source:  # the select's "not connected" choice
        return apply_edit(request, tab_id, lambda doc: _unwire(doc, target, target_port))
    return apply_edit(request, tab_id, lambda doc: edits.connect(doc, source, source_port, target, target_port))


def _unwire(doc, target, target_port):
    edge = next((e for e in doc["edges"] if e["target"] == target and e.get("targetHandle") == target_port
                 and not document.is_trigger(e)), None)
    return edits.disconnect(doc, edge["id"]) if edge else doc


@require_POST
def edge_delete(request: HttpRequest, tab_id: int, edge_id: str) -> HttpResponse:
    return apply_edit(request, tab_id, lambda doc: edits.disconnect(doc, edge_id))
