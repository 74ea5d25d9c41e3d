"""The JSON API's rules for reading a run's captures, shared by the outputs endpoints
(apps.inspector.api) and the stats endpoints (apps.stats.api): a run you may not see does
not exist (404), a port with nothing captured is a 404 that says how to capture it, and a
store that cannot be reached now is a 503."""
from __future__ import annotations

from typing import Callable
from uuid import UUID

from django.http import Http404, HttpRequest, HttpResponse

from codefyui.access import get_readable, get_visible, note_look
from codefyui.api import ApiError, api

from .models import Run
from .store import UNREACHABLE, Capture, StoreUnreachable, get_store

CAPTURE_HINT = ("Turn on Record node outputs (Settings → Recording & Inspection) "
                "and re-run the graph to capture port data.")
GONE = f"is no longer held by the server (evicted, deleted, or the server restarted). {CAPTURE_HINT}"


def visible_run(request: HttpRequest, run_id: UUID) -> Run:
    """The run, for its owner; a GET is a read, which a teacher may also make of their
    students' runs (written to the audit log). Every other method writes: the owner's alone."""
    reads = request.method in ("GET", "HEAD")
    try:
        run = (get_readable if reads else get_visible)(Run.objects, request.user, run_id)
    except Http404:
        raise ApiError(404, f"run '{run_id}' not found") from None
    if reads:
        note_look(request, run.owner_id, "outputs", run.pk)
    return run


def store_call(fn, *args):
    try:
        return fn(*args)
    except StoreUnreachable:
        raise ApiError(503, UNREACHABLE) from None


def port_from_query(request: HttpRequest) -> tuple[str, str]:
    """(node_id, port) from ?node_id=&port=: how ids containing '/' (nodes in a block) are asked for."""
    node_id, port = request.GET.get("node_id", ""), request.GET.get("port", "")
    if not node_id or not port:
        raise ApiError(400, "Send node_id and port as query parameters")
    return node_id, port


def captured(request: HttpRequest, run_id: UUID, node_id: str, port: str) -> tuple[str, Capture]:
    """(run key, capture) of a port the user may see, or the API's 404 / 503 saying why not.
    The outputs and the stats endpoints share these rules."""
    key = str(visible_run(request, run_id).id)
    store = get_store()
    capture = store_call(store.get, key, node_id, port)
    if capture is None and not store_call(store.has_run, key):
        raise ApiError(404, f"run '{run_id}' {GONE}")
    if capture is None and store_call(store.refused, key, node_id, port):
        raise ApiError(404, f"port '{port}' of node '{node_id}' was not kept: run '{run_id}' stopped recording "
                            "when its outputs grew larger than the capture store's budget "
                            "(CODEFYUI_RUN_OUTPUT_STORE_MAX_MB)")
    if capture is None:
        raise ApiError(404, f"port '{port}' of node '{node_id}' was not captured in run '{run_id}'. {CAPTURE_HINT}")
    return key, capture


def port_endpoints(answer: Callable[..., HttpResponse]) -> tuple[Callable, Callable]:
    """The two GET endpoints of one answer about a captured port: by path (.../{node}/{port})
    and by query (?node_id=&port=). Both check the run and the capture with ``captured``; a
    captured None is a 204. ``answer(request, run key, node id, port, capture)`` does the rest."""
    def respond(request: HttpRequest, run_id: UUID, node_id: str, port: str) -> HttpResponse:
        key, capture = captured(request, run_id, node_id, port)
        if capture.value is None:
            return HttpResponse(status=204)
        return answer(request, key, node_id, port, capture)

    @api("GET")
    def by_path(request: HttpRequest, run_id: UUID, node_id: str, port: str) -> HttpResponse:
        return respond(request, run_id, node_id, port)

    @api("GET")
    def by_query(request: HttpRequest, run_id: UUID) -> HttpResponse:
        return respond(request, run_id, *port_from_query(request))

    return by_path, by_query
