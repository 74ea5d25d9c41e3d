"""GET/POST /api/graphs and GET/PUT/DELETE /api/graphs/{id}."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from codefyui.access import get_visible, visible_to
from codefyui.api import ApiError, api, json_body, json_response

from . import document
from .models import Graph, GraphQuotaFull


def _checked(request: HttpRequest) -> dict:
    try:
        return document.normalise(json_body(request))
    except document.DocumentError as exc:
        raise ApiError(400, exc.problems) from None


def _listing(graph: Graph) -> dict:
    return {"id": graph.pk, "name": graph.name, "updated": graph.updated.isoformat()}


@api("GET", "POST")
def graphs(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return json_response([_listing(g) for g in visible_to(Graph.objects, request.user)])
    doc = _checked(request)
    try:
        graph = Graph.objects.create_owned(request.user, doc["name"], doc)
    except GraphQuotaFull as exc:
        raise ApiError(409, str(exc)) from None
    return json_response({**_listing(graph), "document": graph.document}, status=201)


@api("GET", "PUT", "DELETE")
def graph_detail(request: HttpRequest, pk: int) -> HttpResponse:
    graph = get_visible(Graph.objects, request.user, pk)
    if request.method == "DELETE":
        graph.delete()
        return HttpResponse(status=204)
    if request.method == "PUT":
        doc = _checked(request)  # a broken document raises before anything is stored
        graph.document, graph.name = doc, doc["name"][:200]
        graph.save()
    return json_response({**_listing(graph), "document": graph.document})
