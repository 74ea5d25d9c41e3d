"""Login cards: a printable page, one card per student with the server's address and their
username, cut lines between, several cards to an A4 sheet (print CSS, no JavaScript). The
plain page has a line to write the password on; right after students are added or a password
is reset, the cards of exactly those students carry their new passwords, in that response
only (not cached, not kept in the session)."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET

from apps.accounts.roster import Account

from ..lookup import class_of, students


def _render(request: HttpRequest, classroom, accounts: list[Account], **context) -> HttpResponse:
    return render(request, "classes/cards.html", {
        "classroom": classroom, "cards": accounts, "server": request.build_absolute_uri("/"), **context})


@require_GET
def cards(request: HttpRequest, class_id: int) -> HttpResponse:
    classroom = class_of(request, class_id)
    return _render(request, classroom, [Account(user, "") for user in students(classroom)], fresh=False)


def fresh_cards(request: HttpRequest, classroom, accounts: list[Account], added: bool) -> HttpResponse:
    """The cards of these students with the passwords just made: shown this once."""
    response = _render(request, classroom, accounts, fresh=True, added=added)
    add_never_cache_headers(response)   # no-store: Back or a shared computer's cache never shows them again
    return response
