"""The editor page and the answer every editor POST gives. A GET renders the page (or, for
htmx, its #editor partial from the same template); a POST applies one change and answers
302 back to the page with the state its form carried, so the same forms work with and
without JavaScript."""
from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from apps.graphs import edits
from codefyui.access import get_visible, visible_to

from ..context import editor_context
from ..models import Tab

STATE_KEYS = ("node", "run", "view", "panel", "inside")  # see context.page_state


def get_tab(request: HttpRequest, tab_id) -> Tab:
    """The user's tab with its undo history (for editing), or 404."""
    return get_visible(Tab.objects.with_history(), request.user, tab_id)


def posted_tab(request: HttpRequest) -> Tab | None:
    """The tab a form outside any tab's URL names in its ``_tab`` field, if any."""
    tab_id = request.POST.get("_tab")
    return get_visible(Tab.objects, request.user, tab_id) if tab_id else None


def editor_url(tab: Tab | None, **state) -> str:
    """The editor for a tab, keeping the page state (see STATE_KEYS)."""
    base = reverse("editor:tab", args=[tab.pk]) if tab else reverse("editor:index")
    query = urlencode({k: v for k, v in state.items() if v})
    return f"{base}?{query}" if query else base


def back(request: HttpRequest, tab: Tab | None, **changes) -> HttpResponse:
    """302 to the editor with the state the form carried, changed as given."""
    state = {k: v for k, v in parse_qsl(request.POST.get("_state", "")) if k in STATE_KEYS}
    state.update(changes)
    if tab and request.POST.get("_details") and state.get("node"):  # the form sat in Node details
        details = reverse("editor:node-details", args=[tab.pk, state.pop("node")])
        return redirect(f"{details}?{urlencode({k: v for k, v in state.items() if v})}")
    return redirect(editor_url(tab, **state)) if tab else redirect("editor:index")


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
    query = urlencode([(k, v) for k, v in request.GET.items() if k in ("node", "view", "inside")])
    response["HX-Push-Url"] = request.path + (f"?{query}" if query else "")
    return response


@require_GET
def editor(request: HttpRequest) -> HttpResponse:
    """The welcome screen while no tab is open."""
    tab = visible_to(Tab.objects, request.user).first()
    if tab is not None:
        return redirect(editor_url(tab))
    return _render(request, editor_context(request, None))


@require_GET
def editor_tab(request: HttpRequest, tab_id: int) -> HttpResponse:
    return _render(request, editor_context(request, get_tab(request, tab_id)))
