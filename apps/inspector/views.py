"""Inspector fragments: one port row (re-fetched when its producer finishes or a slice is
chosen). The panel itself renders inside the editor page from the same templates."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.graphs.editor_context import inspected_run, inspection, page_state, state_query
from apps.graphs.models import Tab
from codefyui.access import get_visible

from .panel import find_row


@require_GET
def inspect_row(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    tab = get_visible(Tab.objects, request.user, tab_id)
    run = inspected_run(request, tab)
    if not any(n["id"] == node_id for n in tab.document["nodes"]):
        return HttpResponse('<p class="row-message" role="status">This node is no longer in the graph.</p>')
    row, _ = find_row(inspection(request, tab.document, node_id, run), request.GET.get("key", ""))
    if row is None:
        return HttpResponse('<p class="row-message" role="status">This port is no longer connected.</p>')
    state = page_state(request, node_id, run)
    return render(request, "inspector/_row.html", {"row": row, "tab": tab, "state": state,
                                                  "state_query": state_query(state)})
