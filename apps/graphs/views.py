"""The plain home page: the user's graphs and runs, and a graph-file import form."""
from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.runs.models import Run
from codefyui.access import visible_to

from . import document
from .models import Graph

MAX_IMPORT_BYTES = 16 * 2**20


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "graphs/home.html", {
        "graphs": visible_to(Graph.objects, request.user),
        "runs": visible_to(Run.objects, request.user)[:50],
    })


@require_POST
def import_graph(request: HttpRequest) -> HttpResponse:
    upload = request.FILES.get("file")
    if upload is None:
        messages.error(request, "Choose a graph file (.json) to import.")
    elif upload.size > MAX_IMPORT_BYTES:
        messages.error(request, f"{upload.name} is larger than 16 MB; it cannot be a graph file.")
    else:
        try:
            doc = document.load(upload.read())
        except document.DocumentError as exc:
            messages.error(request, f"{upload.name} could not be imported: " + "; ".join(exc.problems))
        else:
            name = doc["name"] or upload.name.removesuffix(".json")
            Graph.objects.create(owner=request.user, name=name[:200], document=doc)
            messages.success(request, f"Imported {name}.")
    return redirect("home")
