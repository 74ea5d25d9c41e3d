"""Inspector fragments: one port row (re-fetched when its producer finishes or a slice is
chosen) and an edge's summary. The panel itself renders inside the editor page, from the same
templates (its tabs share the right-hand column with the node's own, so switching re-renders the page)."""
from __future__ import annotations

from dataclasses import replace

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from apps.graphs import document
from apps.inspector import capture_state as cs
from apps.inspector.panel import TABS, find_row
from apps.inspector.values import fmt, shape_text

from ..context import inspected_run, inspection, run_view
from ..state import PageState
from .page import read_tab

NODE_GONE = "This node is no longer in the graph."
PORT_GONE = "This port is no longer connected."
EDGE_GONE = "That connection no longer exists."


def _gone(request: HttpRequest, message: str, status: int = 200) -> HttpResponse:
    return render(request, "inspector/_gone.html", {"message": message}, status=status)


def _state(request: HttpRequest, node_id: str, run) -> PageState:
    return PageState.of(request).but(node=node_id, run=str(run.id) if run else "")


def _node_inspection(request: HttpRequest, tab_id: int, node_id: str):
    """The tab (a stranger's raises Http404), the run it inspects and the node's inspection;
    None for the inspection once the node is no longer in the graph."""
    tab = read_tab(request, tab_id)
    run = inspected_run(request, tab)
    ins = inspection(request, tab.document, node_id, run)
    present = any(n["id"] == node_id for n in ins.doc["nodes"])
    return tab, run, ins if present else None


@require_GET
def inspect_row(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    tab, run, ins = _node_inspection(request, tab_id, node_id)
    if ins is None:
        return _gone(request, NODE_GONE)
    row, _ = find_row(ins, request.GET.get("key", ""))
    if row is None:
        return _gone(request, PORT_GONE)
    return render(request, "inspector/_row.html", {"row": row, "tab": tab, "state": _state(request, node_id, run)})


@require_GET
def training(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    """The live part of a training node's Training pane, re-fetched while it trains."""
    tab, run, ins = _node_inspection(request, tab_id, node_id)
    if ins is None:
        return _gone(request, NODE_GONE)
    return render(request, "inspector/_training.html#live", {
        "tab": tab, "state": _state(request, node_id, run), "inspector": TABS["training"].context(ins)})


@require_GET
def edge_summary(request: HttpRequest, tab_id: int, edge_id: str) -> HttpResponse:
    """What flowed through an edge in the inspected run: type, shape, dtype, min/max/mean."""
    tab = read_tab(request, tab_id)
    doc = tab.document
    edge = next((e for e in doc["edges"] if e["id"] == edge_id and not document.is_trigger(e)), None)
    if edge is None:
        return _gone(request, EDGE_GONE, status=404)
    run = inspected_run(request, tab)
    labels = {n["id"]: document.node_label(n) for n in doc["nodes"]}
    source, port = edge["source"], edge["sourceHandle"]
    # The small summary is kept on the Run row, so it outlives the captures and needs no recording.
    lookup = (run.nodes.get(source, {}).get("summary") or {}).get(port, cs.MISSING) if run else cs.MISSING
    view = run_view(run)
    captured = cs.row_state(replace(view, recorded=True) if view else None, source, lookup, record_now=True)
    state = _state(request, source, run)
    summary = captured.value if captured.has_value else None
    rows = [(name.capitalize(), summary_text(key, summary[key])) for key, name in SUMMARY_ROWS
            if summary and summary.get(key) is not None]
    template = "inspector/edge.html#summary" if request.htmx else "inspector/edge.html"
    return render(request, template, {
        "tab": tab, "edge": edge, "title": f"{labels[source]} → {labels[edge['target']]} ({port})",
        "captured": captured, "state": state, "rows": rows, "port": port,
        "stats_url": state.url(reverse("editor:node-details", args=[tab.pk, source]), node="", pane="stats", port=port)
                     + f"#stats-{slugify('out.' + port)}",
        "back_url": state.url(reverse("editor:tab", args=[tab.pk])),
    })


def summary_text(key: str, value) -> str:
    """A summary's figure written as the Inspector writes it (-2, not -2.0; float32, not torch.float32)."""
    if key == "shape":
        return shape_text(value)
    if key == "dtype":
        return str(value).removeprefix("torch.")
    return fmt(value)


SUMMARY_ROWS = (("type", "type"), ("shape", "shape"), ("dtype", "dtype"), ("min", "min"), ("max", "max"),
                ("mean", "mean"), ("class", "class"), ("params", "params"), ("trainable", "trainable"),
                ("value", "value"), ("repr", "repr"))
