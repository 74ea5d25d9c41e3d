"""The editor page and the answer every editor POST gives. A GET renders the page (or, for
htmx, its #editor partial from the same template); a POST applies one change and answers
302 back to the page with the state its form carried, so the same forms work with and
without JavaScript."""
from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from apps.graphs import edits
from codefyui.access import get_visible, visible_to

from ..context import editor_context
from ..models import Tab
from ..state import PageState


def get_tab(request: HttpRequest, tab_id) -> Tab:
    """The user's tab with its undo history (for editing), or 404."""
    return get_visible(Tab.objects.with_history(), request.user, tab_id)


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
    """Apply one edit as one undo step; a refused edit says why and changes nothing.
    A change may return (document, id of what it made): ``new="select"`` selects that node,
    ``new="activate"`` makes that segment the active one."""
    tab = get_tab(request, tab_id)
    try:
        result = change(tab.document)
    except edits.EditError as exc:
        messages.error(request, str(exc))
        return back(request, tab)
    doc, made = result if isinstance(result, tuple) else (result, None)
    tab.apply(doc, made if new == "activate" else None)
    tab.save(update_fields=Tab.HISTORY_FIELDS)
    if new == "select":
        state["node"] = made
    return back(request, tab, **state)


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
    """The welcome screen while no tab is open."""
    tab = visible_to(Tab.objects, request.user).first()
    if tab is not None:
        return redirect("editor:tab", tab.pk)
    return _render(request, editor_context(request, None))


@require_GET
def editor_tab(request: HttpRequest, tab_id: int) -> HttpResponse:
    return _render(request, editor_context(request, get_tab(request, tab_id)))
