"""GET /api/graphs/{id}/python and POST /api/graphs/python: a graph as a plain PyTorch script.

Both answer JSON: ``{"script", "filename", "plain_nodes", "total_nodes", "same_numbers", "notes"}``
(the script as text; ``same_numbers`` false when the script says at its top why its numbers
differ from a run's). A graph Run would refuse answers 400 with Run's own problems, and no script.
"""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from apps.graphs import document
from apps.graphs.models import Graph
from codefyui.access import get_visible
from codefyui.api import ApiError, api, json_body, json_response

from .as_python import RunRefused, python_script, script_filename


def answer(doc: dict) -> dict:
    """The script of a document, as the API and the editor's Python view give it (RunRefused as Run)."""
    made = python_script(doc)
    return {"script": made.text, "filename": script_filename(doc.get("name", "")), "plain_nodes": made.plain,
            "total_nodes": made.total, "same_numbers": made.exact, "notes": made.notes}


def _scripted(doc: dict) -> HttpResponse:
    try:
        return json_response(answer(doc))
    except RunRefused as exc:
        raise ApiError(400, exc.problems) from None


@api("GET")
def graph_python(request: HttpRequest, pk: int) -> HttpResponse:
    return _scripted(get_visible(Graph.objects, request.user, pk).document)


@api("POST")
def document_python(request: HttpRequest) -> HttpResponse:
    try:
        doc = document.normalise(json_body(request))
    except document.DocumentError as exc:
        raise ApiError(400, exc.problems) from None
    return _scripted(doc)
