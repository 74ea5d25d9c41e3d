"""Node details: the parameter form on the left and everything the Inspector knows about
the node on the right, as tabs. A page without JavaScript; a modal dialog with it."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.graphs import document, edits
from apps.graphs.models import PackSwitch
from apps.inspector.panes import panes_for

from ..context import inspected_run, inspection, is_look, node_panel
from ..state import PageState
from .page import read_tab


def neighbours(doc: dict[str, Any], node_id: str) -> tuple[str | None, str | None]:
    """The previous and next node on the canvas, reading left to right, top to bottom."""
    order = [n["id"] for n in sorted(doc["nodes"], key=lambda n: (n["position"]["x"], n["position"]["y"]))]
    i = order.index(node_id)
    return (order[i - 1] if i > 0 else None), (order[i + 1] if i + 1 < len(order) else None)


@require_GET
def node_details(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    tab = read_tab(request, tab_id, look="details")
    doc = tab.document
    try:
        node = edits.find_node(doc, node_id)
    except edits.EditError as exc:
        return render(request, "inspector/details_gone.html", {"tab": tab, "message": str(exc)}, status=404)
    cls = edits.node_class(node)
    run = inspected_run(request, tab)
    state = PageState.of(request).but(node=node_id, run=str(run.id) if run else "")
    available = panes_for(cls, run is not None)
    pane = next((p for p in available if p.slug == request.GET.get("pane")), available[0])
    previous, following = neighbours(doc, node_id)
    context: dict[str, Any] = {
        "tab": tab, "read_only": is_look(request, tab), "state": state, "selected": node_panel(doc, node_id, PackSwitch.enabled_packs()),
        "cls": cls, "label": document.node_label(node), "panes": available, "pane": pane.slug,
        "previous": previous, "next": following, "focus_port": request.GET.get("port", ""),
        "inspector": {"template": pane.template, **pane.context(inspection(request, doc, node_id, run))},
    }
    template = "inspector/details.html#details" if request.htmx else "inspector/details.html"
    return render(request, template, context)
