"""POST /api/runs, GET/DELETE /api/runs/{id}, POST /api/runs/{id}/cancel."""
from __future__ import annotations

from uuid import UUID

from django.http import HttpRequest, HttpResponse

from apps.graphs import document
from apps.graphs.models import Graph
from codefyui.access import get_visible
from codefyui.api import ApiError, api, json_body, json_response

from . import service
from .models import Run


def run_json(run: Run) -> dict:
    return {
        "run_id": str(run.id), "status": run.status, "graph": run.graph_id, "graph_name": run.graph_name,
        "options": run.options, "device": run.device, "error": run.error or None,
        "created": run.created.isoformat(),
        "started": run.started.isoformat() if run.started else None,
        "finished": run.finished.isoformat() if run.finished else None,
        "duration": run.duration, "nodes": run.nodes, "log": run.log,
    }


@api("POST")
def runs(request: HttpRequest) -> HttpResponse:
    body = json_body(request)
    if not isinstance(body, dict) or "graph" not in body:
        raise ApiError(400, "Send {\"graph\": <graph id or graph document>, \"options\": {...}}")
    graph, source = None, body["graph"]
    if isinstance(source, dict):
        try:
            doc = document.normalise(source)
        except document.DocumentError as exc:
            raise ApiError(400, exc.problems) from None
    else:
        graph = get_visible(Graph.objects, request.user, source)
        doc = graph.document
    options = body.get("options") or {}
    if not isinstance(options, dict):
        raise ApiError(400, "options must be an object")
    try:
        run = service.start_run(request.user, doc, graph=graph, overrides=options)
    except service.RunRefused as exc:
        raise ApiError(400, exc.problems) from None
    return json_response({"run_id": str(run.id), "status": run.status}, status=202)


@api("GET", "DELETE")
def run_detail(request: HttpRequest, run_id: UUID) -> HttpResponse:
    run = get_visible(Run.objects, request.user, run_id)
    if request.method == "DELETE":
        try:
            service.delete_run(run)
        except service.RunConflict as exc:
            raise ApiError(409, str(exc)) from None
        return HttpResponse(status=204)
    return json_response(run_json(run))


@api("POST")
def run_cancel(request: HttpRequest, run_id: UUID) -> HttpResponse:
    run = get_visible(Run.objects, request.user, run_id)
    try:
        run = service.cancel_run(run)
    except service.RunConflict as exc:
        raise ApiError(409, str(exc)) from None
    return json_response({"run_id": str(run.id), "status": run.status})
