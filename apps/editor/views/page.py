"""The editor page and the answer every editor POST gives. A GET renders the page (or, for
htmx, its #editor partial from the same template); a POST applies one change and answers
302 back to the page with the state its form carried, so the same forms work with and
without JavaScript."""
from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from apps.graphs import document, edits
from codefyui.access import get_readable, get_visible, note_look, visible_to

from ..context import editor_context
from ..models import STALE_EDIT, StaleEdit, Tab
from ..state import PageState


def get_tab(request: HttpRequest, tab_id, for_update: bool = False) -> Tab:
    """The user's tab with its undo history (for editing), or 404. ``for_update`` locks its
    row until the transaction ends, so two server processes edit it one after the other."""
    tabs = Tab.objects.with_history()
    return get_visible(tabs.select_for_update() if for_update else tabs, request.user, tab_id)


def read_tab(request: HttpRequest, tab_id, look: str = "") -> Tab:
    """A tab the user may read, for a GET: their own, or for a teacher a student's (read-only:
    every edit goes through ``get_tab``), else 404. ``look`` names what a teacher's look at a
    student's tab shows, for the audit log (a page's fragments are no look of their own)."""
    tab = get_readable(Tab.objects, request.user, tab_id)
    if look:
        note_look(request, tab.owner_id, look, tab.pk)
    return tab


def posted_revision(request: HttpRequest) -> int | None:
    """The revision of the document the form was made from (its ``_revision`` field), if any."""
    value = request.POST.get("_revision", "")
    return int(value) if value.isascii() and value.isdigit() else None


def posted_tab(request: HttpRequest) -> Tab | None:
    """The tab a form outside any tab's URL names in its ``_tab`` field, if any."""
    tab_id = request.POST.get("_tab")
    return get_visible(Tab.objects, request.user, tab_id) if tab_id else None


def back(request: HttpRequest, tab: Tab | None, **changes) -> HttpResponse:
    """302 to the editor with the state the form carried, changed as given (a change may
    also add a one-off flag such as ``confirm_close``)."""
    if tab is None:
        return redirect("editor:index")
    state = PageState.posted(request)
    node = changes.get("node", state.node)
    if request.POST.get("_details") and node:  # the form sat in Node details
        return redirect(state.url(reverse("editor:node-details", args=[tab.pk, node]), **{**changes, "node": ""}))
    return redirect(state.url(reverse("editor:tab", args=[tab.pk]), **changes))


def apply_edit(request: HttpRequest, tab_id: int, change, new: str = "", **state) -> HttpResponse:
    """Apply one edit as one undo step; a refused edit (or one that grows the graph past its
    limits) says why and changes nothing.
    A change may return (document, id of what it made): ``new="select"`` selects that node,
    ``new="activate"`` makes that segment the active one. An edit from an older revision is
    applied when it touches nothing changed since; otherwise, or when it no longer applies
    at all (its node was deleted), it is refused as stale."""
    made_from = posted_revision(request)
    with transaction.atomic():
        tab = get_tab(request, tab_id, for_update=True)
        try:
            result = change(tab.document)
            doc, made = result if isinstance(result, tuple) else (result, None)
            document.check_limits(doc, before=tab.document)
            tab.apply(doc, made if new == "activate" else None, made_from=made_from)
        except edits.EditError as exc:
            stale = made_from is not None and made_from != tab.revision
            messages.error(request, STALE_EDIT if stale else str(exc))
            return back(request, tab)
        except StaleEdit as exc:
            messages.error(request, str(exc))
            return back(request, tab)
        except document.DocumentError as exc:
            messages.error(request, " ".join(exc.problems))
            return back(request, tab)
    if new == "select":
        state["node"] = made
    return back(request, tab, **state)


def posted_params(request: HttpRequest, *skip: str) -> dict[str, str]:
    """A params form's fields as posted (an unchecked box sends nothing, so it is false)."""
    fields = {k: v for k, v in request.POST.items() if not k.startswith("_") and k not in ("csrfmiddlewaretoken", *skip)}
    for name in request.POST.getlist("_bools"):
        fields.setdefault(name, "false")
    return fields


def posted_number(request: HttpRequest, name: str, default: float = 0.0) -> float:
    try:
        return float(request.POST.get(name, default))
    except (TypeError, ValueError):
        return default


def _render(request: HttpRequest, context: dict) -> HttpResponse:
    if not request.htmx:
        return render(request, "editor/editor.html", context)
    response = render(request, "editor/editor.html#editor", context)
    # Keep the address bar on this tab and node, but without the run: a reload starts fresh.
    response["HX-Push-Url"] = context["state"].url(request.path, run="", panel="")
    return response


@require_GET
def editor(request: HttpRequest) -> HttpResponse:
    """The first open tab, else the welcome screen."""
    tab = visible_to(Tab.objects, request.user).first()
    if tab is not None:
        return redirect("editor:tab", tab.pk)
    return welcome(request)


def welcome(request: HttpRequest) -> HttpResponse:
    """The one start page (the editor with no tab, and ``/``): open tabs, saved graphs, lessons."""
    return _render(request, editor_context(request, None))


@require_GET
def editor_tab(request: HttpRequest, tab_id: int) -> HttpResponse:
    return _render(request, editor_context(request, read_tab(request, tab_id, look="graph")))
