"""GET /api/health: the version, the node count and every in-memory store's usage (the
same figures as the Settings popover's This Server section)."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse

import codefyui
from apps.runs import service
from apps.runs.store import get_store
from apps.stats.cache import get_cache as get_stats_cache
from codefyui.api import api, json_response

from . import palette


@api("GET")
def health(request: HttpRequest) -> HttpResponse:
    return json_response({
        "status": "ok", "version": codefyui.__version__, "nodes": len(palette.catalogue()), "presets": 0,
        "run_workers": service.worker_usage(),
        "stores": {"run_output_store": get_store().usage(), "execution_cache": service.cache_usage(),
                   "stats_cache": get_stats_cache().usage()},
    })
