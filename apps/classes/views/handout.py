"""Hand out a lesson (``/classes/<id>/handout``): a teacher of the class picks a lesson or one of
their saved graphs and every student gets their own copy as a tab. And a student's Reset of
their copy (posted from the editor's File menu), one undo step."""
from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from apps.editor.views.page import back, get_tab

from .. import handouts
from ..forms import HandoutForm
from ..lookup import class_of, students


@require_http_methods(["GET", "POST"])
def handout_page(request: HttpRequest, class_id: int) -> HttpResponse:
    classroom = class_of(request, class_id)
    form = HandoutForm(request.POST or None, sources=handouts.sources(request.user))
    if request.method == "POST" and form.is_valid():
        found = handouts.snapshot(request.user, form.cleaned_data["source"])
        if found is not None:
            document, name = found
            handout, given, full = handouts.hand_out(classroom, request.user, document,
                                                     form.cleaned_data["title"].strip() or name,
                                                     form.cleaned_data["source"])
            _tell(request, handout, given, full)
            return redirect("classes:handout", classroom.pk)
        form.add_error("source", "That lesson or graph is no longer there. Choose another.")
    return render(request, "classes/handout.html", {
        "classroom": classroom, "form": form, "fresh_days": handouts.FRESH_DAYS,
        "handouts": classroom.handouts.select_related("teacher").prefetch_related("copies")[:20],
    }, status=400 if form.errors else 200)


def _tell(request: HttpRequest, handout, given: list, full: list) -> None:
    messages.success(request, f"Handed out “{handout.title}”: {len(given)} student{'s' if len(given) != 1 else ''} "
                              "got their own copy as a new tab.")
    if full:
        names = ", ".join(s.username for s in full)
        messages.warning(request, f"No copy for {names}: they have as many tabs open as one may. "
                                  "Ask them to close a tab, then press “Give to students without a copy”.")


@require_POST
def handout_again(request: HttpRequest, class_id: int, handout_id: int) -> HttpResponse:
    """Give a handout to the class's students who have no copy yet (their tabs were full)."""
    classroom = class_of(request, class_id)
    handout = classroom.handouts.filter(pk=handout_id).first()
    if handout is None:
        raise Http404("No such handout in this class")
    given, full = handouts.give(handout, list(students(classroom)))
    _tell(request, handout, given, full)
    return redirect("classes:handout", classroom.pk)


@require_POST
def handout_reset(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Put the handed-out version back in the student's own copy; Undo brings their work back."""
    with transaction.atomic():
        tab = get_tab(request, tab_id, for_update=True)
        if handouts.handout_of(tab) is None:
            raise Http404("This tab is no handed-out lesson")
        if handouts.reset(tab):
            messages.success(request, f"“{tab.title}” is back to the version your teacher handed out. "
                                      "Press Undo to get your changes back.")
    return back(request, tab)
