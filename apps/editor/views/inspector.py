"""Inspector fragments: one port row (re-fetched when its producer finishes or a slice is
chosen). The panel itself renders inside the editor page from the same templates."""
from __future__ import annotations

from dataclasses import replace

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from apps.graphs import document
from apps.inspector import capture_state as cs
from apps.inspector.panel import find_row
from codefyui.access import get_visible

from ..context import inspected_run, inspection, inspector, page_state, run_view, state_query
from ..models import Tab


@require_GET
def inspect_panel(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    """The Inspector column alone (switching its tabs swaps only this)."""
    tab = get_visible(Tab.objects, request.user, tab_id)
    run = inspected_run(request, tab)
    shown = inspection(request, tab.document, node_id, run).doc
    if not any(n["id"] == node_id for n in shown["nodes"]):
        return HttpResponse('<p class="row-message" role="status">This node is no longer in the graph.</p>', status=404)
    state = page_state(request, node_id, run)
    return render(request, "inspector/_panel.html", {
        "tab": tab, "state": state, "state_query": state_query(state), "base_query": state_query({**state, "node": ""}),
        "inspector": inspector(request, tab.document, node_id, run, state["view"] or "forward")})


@require_GET
def inspect_row(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    tab = get_visible(Tab.objects, request.user, tab_id)
    run = inspected_run(request, tab)
    ins = inspection(request, tab.document, node_id, run)
    if not any(n["id"] == node_id for n in ins.doc["nodes"]):
        return HttpResponse('<p class="row-message" role="status">This node is no longer in the graph.</p>')
    row, _ = find_row(ins, request.GET.get("key", ""))
    if row is None:
        return HttpResponse('<p class="row-message" role="status">This port is no longer connected.</p>')
    state = page_state(request, node_id, run)
    return render(request, "inspector/_row.html", {"row": row, "tab": tab, "state": state,
                                                  "state_query": state_query(state)})


@require_GET
def edge_summary(request: HttpRequest, tab_id: int, edge_id: str) -> HttpResponse:
    """What flowed through an edge in the inspected run: type, shape, dtype, min/max/mean."""
    tab = get_visible(Tab.objects, request.user, tab_id)
    doc = tab.document
    edge = next((e for e in doc["edges"] if e["id"] == edge_id and not document.is_trigger(e)), None)
    if edge is None:
        return HttpResponse('<p class="row-message" role="status">That connection no longer exists.</p>', status=404)
    run = inspected_run(request, tab)
    labels = {n["id"]: document.node_label(n) for n in doc["nodes"]}
    source, port = edge["source"], edge["sourceHandle"]
    # The small summary is kept on the Run row, so it outlives the captures and needs no recording.
    lookup = (run.nodes.get(source, {}).get("summary") or {}).get(port, cs.MISSING) if run else cs.MISSING
    view = run_view(run)
    state = cs.row_state(replace(view, recorded=True) if view else None, source, lookup, record_now=True)
    page = page_state(request, source, run)
    summary = state.value if state.has_value else None
    rows = [(name.capitalize(), summary[key]) for key, name in SUMMARY_ROWS if summary and summary.get(key) is not None]
    template = "inspector/edge.html#summary" if request.htmx else "inspector/edge.html"
    return render(request, template, {
        "tab": tab, "edge": edge, "title": f"{labels[source]} → {labels[edge['target']]} ({port})",
        "state": state, "rows": rows, "page": page, "port": port,
        "stats_url": f"{reverse('editor:node-details', args=[tab.pk, source])}?{state_query({**page, 'node': ''})}"
                     f"&pane=stats&port={port}#stats-{slugify('out.' + port)}",
        "back_url": f"{reverse('editor:tab', args=[tab.pk])}?{state_query(page)}",
    })


SUMMARY_ROWS = (("type", "type"), ("shape", "shape"), ("dtype", "dtype"), ("min", "min"), ("max", "max"),
                ("mean", "mean"), ("class", "class"), ("params", "params"), ("trainable", "trainable"),
                ("value", "value"), ("repr", "repr"))
