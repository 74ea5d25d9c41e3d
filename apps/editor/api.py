"""GET /api/health: the version, the node count and every in-memory store's usage (the
same figures as the Settings popover's This Server section)."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from codefyui.api import api, json_response

from .context import server_facts


@api("GET")
def health(request: HttpRequest) -> HttpResponse:
    return json_response({"status": "ok", **server_facts()})
