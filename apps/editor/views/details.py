"""Node details: the parameter form on the left and everything the Inspector knows about
the node on the right, as tabs. A page without JavaScript; a modal dialog with it."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.graphs import document, edits, subgraphs
from apps.inspector.panel import TABS, forward_rows
from apps.inspector.stats_pane import stats_rows_for
from codefyui.access import get_visible

from ..context import inspected_run, inspection, node_panel, page_state, state_query
from ..models import Tab


def panes(cls, has_run: bool) -> list[tuple[str, str]]:
    """(slug, title) of the tabs this node has, in the seed's order."""
    found = []
    if getattr(cls, "script", False):
        found.append(("code", "Code"))
    if getattr(cls, "subgraph", False):
        found.append(("subgraph", "Subgraph"))
    found += [("inputs", "Inputs"), ("outputs", "Outputs")]
    if has_run:
        found += [("steps", "Steps"), ("backward", "Backward")]
    return found + [("stats", "Stats"), ("docs", "Docs")]


def neighbours(doc: dict[str, Any], node_id: str) -> tuple[str | None, str | None]:
    """The previous and next node on the canvas, reading left to right, top to bottom."""
    order = [n["id"] for n in sorted(doc["nodes"], key=lambda n: (n["position"]["x"], n["position"]["y"]))]
    i = order.index(node_id)
    return (order[i - 1] if i > 0 else None), (order[i + 1] if i + 1 < len(order) else None)


@require_GET
def node_details(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    tab = get_visible(Tab.objects, request.user, tab_id)
    doc = tab.document
    try:
        node = edits.find_node(doc, node_id)
    except edits.EditError as exc:
        return render(request, "inspector/details_gone.html", {"tab": tab, "message": str(exc)}, status=404)
    cls = edits.node_class(node)
    run = inspected_run(request, tab)
    state = page_state(request, node_id, run)
    available = panes(cls, run is not None)
    pane = request.GET.get("pane") or available[0][0]
    pane = pane if pane in dict(available) else available[0][0]
    ins = inspection(request, doc, node_id, run)
    previous, following = neighbours(doc, node_id)
    context: dict[str, Any] = {
        "tab": tab, "state": state, "state_query": state_query(state), "selected": node_panel(doc, node_id),
        "cls": cls, "label": document.node_label(node), "panes": available, "pane": pane,
        "previous": previous, "next": following,
        "focus_port": request.GET.get("port", ""),
    }
    if pane in ("inputs", "outputs"):
        inputs, outputs, _ = forward_rows(ins)
        context["rows"] = inputs if pane == "inputs" else outputs
    elif pane in ("steps", "backward"):
        tab_panel = TABS[pane]
        context["inspector"] = {"template": tab_panel.template, **tab_panel.context(ins)}
    elif pane == "subgraph":
        context["boundary"] = subgraphs.definition(node)
    elif pane == "stats":
        context["stats"] = stats_rows_for(ins)
    template = "inspector/details.html#details" if request.htmx else "inspector/details.html"
    return render(request, template, context)
