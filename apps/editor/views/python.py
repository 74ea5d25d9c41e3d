"""The Python view: the tab's graph as a plain PyTorch script (apps/runs/engine/to_python.py),
highlighted on the server, to copy or download as ``<graph>.py``. A page of its own without
JavaScript; with it, a dialog over the editor (the same template's ``python`` partial)."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from apps.runs.as_python import RunRefused, python_script, script_filename
from apps.runs.engine.to_python import Script

from ..state import PageState
from .page import read_tab

FORMATTER = HtmlFormatter(cssclass="python-code", wrapcode=True)   # classes, styled by css/python.css


def _made(tab) -> tuple[Script | None, list[str], str]:
    """(script, problems, filename) of a tab's graph: problems are Run's own, and then no script."""
    filename = script_filename(tab.document.get("name") or tab.title)
    try:
        return python_script(tab.document), [], filename
    except RunRefused as exc:
        return None, exc.problems, filename


@require_GET
def tab_python(request: HttpRequest, tab_id: int) -> HttpResponse:
    tab = read_tab(request, tab_id, look="graph")
    made, problems, filename = _made(tab)
    context = {"tab": tab, "state": PageState.of(request), "script": made, "problems": problems, "filename": filename,
               "highlighted": highlight(made.text, PythonLexer(), FORMATTER) if made else ""}
    return render(request, "editor/python.html#python" if request.htmx else "editor/python.html", context,
                  status=200 if made or request.htmx else 400)   # htmx swaps only a 2xx answer


@require_GET
def tab_python_download(request: HttpRequest, tab_id: int) -> HttpResponse:
    tab = read_tab(request, tab_id, look="graph")
    made, problems, filename = _made(tab)
    if made is None:
        return render(request, "editor/python.html", {"tab": tab, "state": PageState.of(request), "problems": problems,
                                                      "filename": filename}, status=400)
    response = HttpResponse(made.text, content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
