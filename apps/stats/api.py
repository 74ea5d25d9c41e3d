"""GET …/{run}/{node}/{port}/stats: a fixed-size summary of one captured port (reference §6).

Same rules as the outputs API: a run you may not see does not exist (404), a port with
nothing captured is a 404 that says how to capture it, a captured None is a 204, and a
store that cannot be reached now is a 503. The summary is computed once per capture and
cached (apps.stats.cache)."""
from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse

from apps.runs.models import Run
from apps.runs.store import StoreUnreachable, get_store
from codefyui import conf
from codefyui.access import get_visible
from codefyui.api import ApiError, api, json_response

from .cache import get_cache
from .summary import summarise

CAPTURE_HINT = ("Turn on Record node outputs (Settings → Recording & Inspection) "
                "and re-run the graph to capture port data.")
UNREACHABLE = "The worker that holds this run's recorded outputs cannot be reached now"


@api("GET")
def port_stats(request: HttpRequest, run_id: str, node_id: str, port: str) -> HttpResponse:
    return _stats(request, run_id, node_id, port)


@api("GET")
def port_stats_by_query(request: HttpRequest, run_id: str) -> HttpResponse:
    """For node ids containing '/': ?node_id=&port=."""
    node_id, port = request.GET.get("node_id", ""), request.GET.get("port", "")
    if not node_id or not port:
        raise ApiError(400, "Send node_id and port as query parameters")
    return _stats(request, run_id, node_id, port)


def _stats(request: HttpRequest, run_id: str, node_id: str, port: str) -> HttpResponse:
    try:
        run = get_visible(Run.objects, request.user, run_id)
    except Http404:
        raise ApiError(404, f"run '{run_id}' not found") from None
    key = str(run.id)
    store = get_store()
    try:
        capture = store.get(key, node_id, port)
        held = capture is not None or store.has_run(key)
    except StoreUnreachable:
        raise ApiError(503, UNREACHABLE) from None
    if not held:
        raise ApiError(404, f"run '{run_id}' is no longer held by the server (evicted, deleted, or the "
                            f"server restarted). {CAPTURE_HINT}")
    if capture is None:
        raise ApiError(404, f"port '{port}' of node '{node_id}' was not captured in run '{run_id}'. {CAPTURE_HINT}")
    if capture.value is None:
        return HttpResponse(status=204)
    summary = get_cache().get((key, node_id, port, capture.serial), lambda: summarise(
        capture.value, threshold=conf.STATS_SAMPLE_THRESHOLD, sample_size=conf.STATS_SAMPLE_SIZE))
    return json_response({"run_id": key, "node_id": node_id, "port": port, **summary})
