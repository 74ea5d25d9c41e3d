"""GET …/{run}/{node}/{port}/stats: a fixed-size summary of one captured port (reference §6).

Same rules as the outputs API (apps.runs.capture_api): a run you may not see does not exist
(404), a port with nothing captured is a 404 that says how to capture it, a captured None is
a 204, and a store that cannot be reached now is a 503. The summary is computed once per
capture and cached (apps.stats.cache)."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from apps.runs.capture_api import port_endpoints
from apps.runs.store import Capture
from codefyui.api import json_response

from .cache import port_summary


def _stats(request: HttpRequest, key: str, node_id: str, port: str, capture: Capture) -> HttpResponse:
    summary = port_summary(key, node_id, port, capture.serial, capture.value)
    return json_response({"run_id": key, "node_id": node_id, "port": port, **summary})


port_stats, port_stats_by_query = port_endpoints(_stats)
