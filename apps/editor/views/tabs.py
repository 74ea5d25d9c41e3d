"""Tabs: open (blank, saved graph, example, file), rename, close, save, undo / redo, and
the workspace file."""
from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from apps.graphs.models import Graph, GraphQuotaFull
from codefyui.access import get_visible

from .. import workspace
from ..models import StaleEdit, Tab
from .page import back, get_tab, posted_revision


@require_POST
def tab_new(request: HttpRequest) -> HttpResponse:
    return open_tab(request)


@require_POST
def tab_open(request: HttpRequest) -> HttpResponse:
    graph = get_visible(Graph.objects, request.user, request.POST.get("graph"))
    return open_tab(request, graph.document, title=graph.name, graph=graph)


@require_POST
def tab_example(request: HttpRequest) -> HttpResponse:
    example = workspace.example(request.POST.get("example", ""))
    if example is None:
        messages.error(request, "Failed to load example")
        return redirect("editor:index")
    return open_tab(request, example, title=example["name"])


@require_POST
def tab_import(request: HttpRequest) -> HttpResponse:
    upload = request.FILES.get("file")
    try:
        tabs = workspace.import_file(request.user, upload)
    except (workspace.ImportRefused, workspace.TabQuotaFull) as exc:
        messages.error(request, str(exc))
        return _back_to(request)
    messages.success(request, f"Imported {len(tabs)} tab{'s' if len(tabs) != 1 else ''}.")
    return back(request, tabs[0])


def open_tab(request: HttpRequest, *doc, **tab) -> HttpResponse:
    """A new tab (``workspace.new_tab``'s arguments), shown; or why the student may not open one."""
    try:
        return back(request, workspace.new_tab(request.user, *doc, **tab))
    except workspace.TabQuotaFull as exc:
        messages.error(request, str(exc))
        return _back_to(request)


def _back_to(request: HttpRequest) -> HttpResponse:
    """To the page the form came from (its ``_back`` field), if that is a page of this site."""
    target = request.POST.get("_back", "")
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return HttpResponseRedirect(target)
    return redirect("editor:index")


@require_POST
def tab_rename(request: HttpRequest, tab_id: int) -> HttpResponse:
    tab = get_tab(request, tab_id)
    title = request.POST.get("title", "").strip()[:80]
    if title:  # a blank name is ignored
        tab.title = title
        tab.save(update_fields=["title"])
    return back(request, tab)


@require_POST
def tab_close(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Close a tab; a run it started goes on (find it in the Runs panel)."""
    tab = get_tab(request, tab_id)
    if tab.last_run and not tab.last_run.is_finished and request.POST.get("confirm") != "yes":
        messages.warning(request, "This tab is still running. Close it anyway?")
        return back(request, tab, confirm_close="1")
    tab.delete()
    return redirect("editor:index")


@require_POST
def tab_save(request: HttpRequest, tab_id: int) -> HttpResponse:
    tab = get_tab(request, tab_id)
    name = tab.document.get("name") or tab.title
    if tab.graph is None:
        try:
            tab.graph = Graph.objects.create_owned(request.user, name, tab.document)
        except GraphQuotaFull as exc:
            messages.error(request, str(exc))
            return back(request, tab)
        tab.save(update_fields=["graph"])
    else:
        tab.graph.document, tab.graph.name = tab.document, name[:200]
        tab.graph.save()
    messages.success(request, f"Saved {name}.")
    return back(request, tab)


def _history(request: HttpRequest, tab_id: int, step) -> HttpResponse:
    """Undo or Redo; from an older revision only if it touches nothing changed since."""
    with transaction.atomic():
        tab = get_tab(request, tab_id, for_update=True)
        try:
            step(tab, made_from=posted_revision(request))
        except StaleEdit as exc:
            messages.error(request, str(exc))
    return back(request, tab)


@require_POST
def undo(request: HttpRequest, tab_id: int) -> HttpResponse:
    return _history(request, tab_id, Tab.undo)


@require_POST
def redo(request: HttpRequest, tab_id: int) -> HttpResponse:
    return _history(request, tab_id, Tab.redo)


@require_GET
def workspace_export(request: HttpRequest) -> HttpResponse:
    data, filename = workspace.export(request.user)
    response = HttpResponse(data, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
