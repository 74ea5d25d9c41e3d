"""GET …/{run}/{node}/{port}/stats: a fixed-size summary of one captured port (reference §6).

Same rules as the outputs API: a run you may not see does not exist (404), a port with
nothing captured is a 404 that says how to capture it, a captured None is a 204, and a
store that cannot be reached now is a 503. The summary is computed once per capture and
cached (apps.stats.cache)."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from apps.runs.capture_api import captured, port_from_query
from codefyui.api import api, json_response

from .cache import port_summary


@api("GET")
def port_stats(request: HttpRequest, run_id: str, node_id: str, port: str) -> HttpResponse:
    return _stats(request, run_id, node_id, port)


@api("GET")
def port_stats_by_query(request: HttpRequest, run_id: str) -> HttpResponse:
    return _stats(request, run_id, *port_from_query(request))


def _stats(request: HttpRequest, run_id: str, node_id: str, port: str) -> HttpResponse:
    key, capture = captured(request, run_id, node_id, port)
    if capture.value is None:
        return HttpResponse(status=204)
    summary = port_summary(key, node_id, port, capture.serial, capture.value)
    return json_response({"run_id": key, "node_id": node_id, "port": port, **summary})
