"""The start page (``/``): the same welcome screen as the editor with no tab open, listing the
student's open tabs, saved graphs, runs and the lessons; and a graph file saved straight to
their graphs."""
from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from apps.graphs.models import Graph, GraphQuotaFull

from .. import workspace
from .page import welcome


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return welcome(request)


@require_POST
def import_graph(request: HttpRequest) -> HttpResponse:
    upload = request.FILES.get("file")
    try:
        doc = workspace.load_graph(workspace.read_upload(upload), upload.name)
    except workspace.ImportRefused as exc:
        messages.error(request, str(exc))
    else:
        name = doc["name"] or upload.name.removesuffix(".json")
        try:
            Graph.objects.create_owned(request.user, name, doc)
        except GraphQuotaFull as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Imported {name}.")
    return redirect("home")
