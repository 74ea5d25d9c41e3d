"""Nodes: add, parameters, the values grid, move, rename, delete, Auto layout, and
collapsing nodes into a block / expanding it again."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from apps.graphs import edits, subgraphs
from apps.graphs.models import PackSwitch
from apps.graphs.nodes.packs import missing_pack

from ..context import card_heights, named_run
from ..prefs import Prefs
from ..state import PageState
from .page import apply_edit, posted_number, posted_params


@require_POST
def node_add(request: HttpRequest, tab_id: int) -> HttpResponse:
    type_key, snap = request.POST.get("type", ""), Prefs.from_request(request).grid_snap

    def add(doc):  # without a drop point (the sidebar's buttons), a free place near the selected node
        if missing := missing_pack(type_key, PackSwitch.enabled_packs()):
            raise edits.EditError(missing.message())
        if "x" in request.POST and "y" in request.POST:
            x, y = posted_number(request, "x"), posted_number(request, "y")
        else:
            x, y = edits.free_place(doc, near=PageState.posted(request).node)
        return edits.add_node(doc, type_key, x, y, snap)
    return apply_edit(request, tab_id, add, new="select")


@require_POST
def node_params(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    fields = posted_params(request)
    return apply_edit(request, tab_id, lambda doc: edits.set_params(doc, node_id, fields), node=node_id)


@require_POST
def node_grid(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    fill = request.POST.get("fill")
    cells = request.POST.getlist("cell")
    return apply_edit(request, tab_id, lambda doc: edits.set_grid(doc, node_id, cells=cells, fill=fill), node=node_id)


@require_POST
def node_move(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    snap = Prefs.from_request(request).grid_snap
    x, y = posted_number(request, "x"), posted_number(request, "y")
    return apply_edit(request, tab_id, lambda doc: edits.move_node(doc, node_id, x, y, snap))


@require_POST
def node_rename(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    return apply_edit(request, tab_id, lambda doc: edits.rename_node(doc, node_id, request.POST.get("label", "")))


@require_POST
def nodes_delete(request: HttpRequest, tab_id: int) -> HttpResponse:
    ids = set(request.POST.getlist("node"))
    return apply_edit(request, tab_id, lambda doc: edits.delete_nodes(doc, ids), node="")


@require_POST
def layout(request: HttpRequest, tab_id: int) -> HttpResponse:
    width = posted_number(request, "width", 720)  # the canvas's width: the script sends it, 720 px fits a laptop
    run = named_run(request, PageState.posted(request).run)  # its pictures make cards taller
    return apply_edit(request, tab_id, lambda doc: edits.auto_layout(doc, width, card_heights(request, doc, run)))


@require_POST
def collapse(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Collapse to subgraph: the selected nodes become one block (one undo step)."""
    ids = set(request.POST.getlist("node"))
    return apply_edit(request, tab_id, lambda doc: subgraphs.collapse(doc, ids), node="")


@require_POST
def expand(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    return apply_edit(request, tab_id, lambda doc: subgraphs.expand(doc, node_id), node="", inside="")
