"""The Python view: the tab's graph as a plain PyTorch script (apps/runs/engine/to_python.py),
highlighted on the server, to copy or download as ``<graph>.py``. A page of its own without
JavaScript; with it, a dialog over the editor (the same template's ``python`` partial)."""
from __future__ import annotations

import re

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

TAGS = re.compile(r"<[^>]+>")
DEEPEST = 6   # indent classes i0..i6 (4 spaces each), styled by css/python.css


class _LineFormatter(HtmlFormatter):
    """Pygments' HTML with each line in a ``<span class="line iN">`` (N: its indent in steps of 4
    spaces), so that css/python.css can wrap a line too long for the screen with a hanging indent
    instead of hiding its end behind a horizontal scroll (a projector shows no scrollbar)."""

    def wrap(self, source):
        return super().wrap(self._lines(source))

    @staticmethod
    def _lines(source):
        for kind, line in source:
            if kind == 1:
                text = TAGS.sub("", line)
                depth = min((len(text) - len(text.lstrip(" "))) // 4, DEEPEST)
                line = f'<span class="line i{depth}">{line}</span>'
            yield kind, line


FORMATTER = _LineFormatter(cssclass="python-code", wrapcode=True)   # classes, styled by css/python.css


def _said(made: Script) -> tuple[str, str]:
    """(how many nodes are plain code, how to run it): in the words of the view's header."""
    kind = "PyTorch or scikit-learn" if "from sklearn import" in made.text else "PyTorch"
    others = made.total - made.plain
    if others == 0:
        nodes = ("Its one node is" if made.total == 1 else f"All {made.total} nodes are") + f" written as plain {kind}."
    else:
        them = "it" if others == 1 else "them"
        nodes = (f"{made.plain} of the {made.total} nodes are written as plain {kind}; the other {others} "
                 f"{'is one line' if others == 1 else 'are one line each'} that asks CodefyUI to run {them} "
                 f"(run_node).")
    where = "" if others == 0 else " in CodefyUI's folder"
    return nodes, where


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
    nodes, where = _said(made) if made else ("", "")
    context = {"tab": tab, "state": PageState.of(request), "script": made, "problems": problems, "filename": filename,
               "in_dialog": bool(request.htmx), "nodes_said": nodes, "run_where": where,
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
