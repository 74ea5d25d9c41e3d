"""The class list and the class view: every student, the graph they are on and their last
run, live. With JavaScript the table is fetched again when a run of the class starts or
ends (``consumers.ClassConsumer``); without, the page refreshes itself."""
from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.accounts.roles import classes_of

from .. import board
from ..lookup import class_of

REFRESH_S = {True: 2, False: 10}   # without JavaScript: while a student's run goes, and otherwise


def _shown(request: HttpRequest) -> str:
    show = request.GET.get("show", "all")
    return show if show in board.FILTERS else "all"


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    """The classes this teacher teaches."""
    classes = classes_of(request.user)
    if not classes.exists() and not request.user.has_perm("accounts.look_at_work"):
        raise Http404("Not found")   # a student has no class pages
    return render(request, "classes/index.html", {"classes": classes})


def _context(request: HttpRequest, class_id: int) -> dict:
    classroom, show = class_of(request, class_id), _shown(request)
    rows = board.rows(classroom, show)
    return {"classroom": classroom, "rows": rows, "show": show, "filters": board.FILTERS,
            "refresh_s": REFRESH_S[any(r.run is not None and not r.run.is_finished for r in rows)]}


@require_GET
def class_view(request: HttpRequest, class_id: int) -> HttpResponse:
    return render(request, "classes/board.html", _context(request, class_id))


@require_GET
def table(request: HttpRequest, class_id: int) -> HttpResponse:
    """The table alone: what the page fetches when the socket says a run changed."""
    return render(request, "classes/board.html#table", _context(request, class_id))
