"""The plain home page: the user's graphs and runs, and a graph-file import form."""
from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.graphs.models import Graph, GraphQuotaFull
from apps.runs.models import Run
from codefyui.access import visible_to

from .. import workspace


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "graphs/home.html", {
        "graphs": visible_to(Graph.objects, request.user),
        "runs": visible_to(Run.objects, request.user)[:50],
        "lesson_groups": workspace.lesson_groups(),   # the blank graph and the lessons are one click away
    })


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
