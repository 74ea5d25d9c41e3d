"""A class's Students page (``/classes/<id>/roster``): the list of students, adding a whole
class at once (pasted CSV, a CSV file or typed names) and a new password for one student.
Both answer with the login cards of exactly the students concerned, passwords on them, in
that one response: nothing keeps the passwords afterwards."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from apps.accounts import roster

from ..forms import AddStudentsForm
from ..lookup import class_of, student_of, students
from .cards import fresh_cards


def _page(request: HttpRequest, classroom, form: AddStudentsForm, status: int = 200) -> HttpResponse:
    return render(request, "classes/roster.html", {
        "classroom": classroom, "students": students(classroom), "form": form,
        "max_accounts": roster.MAX_ACCOUNTS}, status=status)


@require_GET
def roster_page(request: HttpRequest, class_id: int) -> HttpResponse:
    return _page(request, class_of(request, class_id), AddStudentsForm())


@require_POST
def add_students(request: HttpRequest, class_id: int) -> HttpResponse:
    classroom = class_of(request, class_id)
    form = AddStudentsForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            accounts = roster.add_students(classroom, form.cleaned_data["entries"])
        except roster.RosterError as exc:
            form.add_error(None, ["Nothing was added. Fix the list and add it again.", *exc.problems])
        else:
            return fresh_cards(request, classroom, accounts, added=True)
    return _page(request, classroom, form, status=400)


@require_POST
def reset_password(request: HttpRequest, class_id: int, student_id: int) -> HttpResponse:
    classroom = class_of(request, class_id)
    account = roster.reset_password(student_of(classroom, student_id))
    return fresh_cards(request, classroom, [account], added=False)
