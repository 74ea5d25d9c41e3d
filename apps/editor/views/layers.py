"""The Layers editor of a SequentialModel (its pane in Node details): each form applies one
layer edit (apps/graphs/layer_edits.py) as one undo step, like every other edit."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from apps.graphs import layer_edits

from .page import apply_edit, posted_params


@require_POST
def layer_add(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    type_key, after = request.POST.get("type", ""), request.POST.get("after", "")
    return apply_edit(request, tab_id, lambda doc: layer_edits.add_layer(doc, node_id, type_key, after)[0], node=node_id)


@require_POST
def layer_remove(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    layer = request.POST.get("layer", "")
    return apply_edit(request, tab_id, lambda doc: layer_edits.remove_layer(doc, node_id, layer), node=node_id)


@require_POST
def layer_move(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    layer, direction = request.POST.get("layer", ""), request.POST.get("direction", "")
    return apply_edit(request, tab_id, lambda doc: layer_edits.move_layer(doc, node_id, layer, direction), node=node_id)


@require_POST
def layer_params(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    layer, fields = request.POST.get("layer", ""), posted_params(request, "layer")
    return apply_edit(request, tab_id, lambda doc: layer_edits.set_layer_params(doc, node_id, layer, fields), node=node_id)


@require_POST
def sample_shape(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    shape = request.POST.get("shape", "")
    return apply_edit(request, tab_id, lambda doc: layer_edits.set_sample_shape(doc, node_id, shape), node=node_id)


@require_POST
def model_from_selection(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Make model from layers: the selected layer nodes as a new SequentialModel (selected)."""
    ids = set(request.POST.getlist("node"))
    return apply_edit(request, tab_id, lambda doc: layer_edits.model_from_nodes(doc, ids), new="select")
