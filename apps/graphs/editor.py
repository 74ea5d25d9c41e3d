"""The editor's views: each is a few lines. A GET renders the editor page (or, for htmx,
its #editor partial from the same template); every POST applies one change and answers
303 back to the editor, so the same forms work with and without JavaScript."""
from __future__ import annotations

from uuid import UUID

from urllib.parse import parse_qsl, urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.runs import service
from apps.runs.models import Run
from codefyui.access import get_visible, visible_to

from . import document, edits, subgraphs, workspace
from .editor_context import editor_context
from .models import Graph, Tab
from .prefs import Prefs


def _tab(request: HttpRequest, tab_id: int) -> Tab:
    return get_visible(Tab.objects.with_history(), request.user, tab_id)


STATE_KEYS = ("node", "run", "view", "panel", "inside")  # see editor_context.page_state


def editor_url(tab: Tab | None, **state) -> str:
    """The editor for a tab, keeping the page state (see STATE_KEYS)."""
    base = reverse("editor-tab", args=[tab.pk]) if tab else reverse("editor")
    query = urlencode({k: v for k, v in state.items() if v})
    return f"{base}?{query}" if query else base


def back(request: HttpRequest, tab: Tab | None, **changes) -> HttpResponse:
    """303 to the editor with the state the form carried, changed as given."""
    state = {k: v for k, v in parse_qsl(request.POST.get("_state", "")) if k in STATE_KEYS}
    state.update(changes)
    if tab and request.POST.get("_details") and state.get("node"):  # the form sat in Node details
        details = reverse("node-details", args=[tab.pk, state.pop("node")])
        return redirect(f"{details}?{urlencode({k: v for k, v in state.items() if v})}")
    return redirect(editor_url(tab, **state), permanent=False) if tab else redirect("editor")


def _render(request: HttpRequest, context: dict) -> HttpResponse:
    if not request.htmx:
        return render(request, "editor/editor.html", context)
    response = render(request, "editor/editor.html#editor", context)
    # Keep the address bar on this tab and node, but without the run: a reload starts fresh.
    query = urlencode([(k, v) for k, v in request.GET.items() if k in ("node", "view", "inside")])
    response["HX-Push-Url"] = request.path + (f"?{query}" if query else "")
    return response


# -- pages ----------------------------------------------------------------------------------

@require_GET
def editor(request: HttpRequest) -> HttpResponse:
    """The welcome screen while no tab is open."""
    tab = visible_to(Tab.objects, request.user).first()
    if tab is not None:
        return redirect(editor_url(tab))
    return _render(request, editor_context(request, None))


@require_GET
def editor_tab(request: HttpRequest, tab_id: int) -> HttpResponse:
    return _render(request, editor_context(request, _tab(request, tab_id)))


# -- tabs -----------------------------------------------------------------------------------

@require_POST
def tab_new(request: HttpRequest) -> HttpResponse:
    return back(request, workspace.new_tab(request.user))


@require_POST
def tab_open(request: HttpRequest) -> HttpResponse:
    graph = get_visible(Graph.objects, request.user, request.POST.get("graph"))
    return back(request, workspace.new_tab(request.user, graph.document, title=graph.name, graph=graph))


@require_POST
def tab_example(request: HttpRequest) -> HttpResponse:
    example = workspace.example(request.POST.get("example", ""))
    if example is None:
        messages.error(request, "Failed to load example")
        return redirect("editor")
    return back(request, workspace.new_tab(request.user, example, title=example["name"]))


@require_POST
def tab_import(request: HttpRequest) -> HttpResponse:
    upload = request.FILES.get("file")
    try:
        tabs = workspace.import_file(request.user, upload)
    except workspace.ImportRefused as exc:
        messages.error(request, str(exc))
        return redirect(request.POST.get("_back") or "editor")
    messages.success(request, f"Imported {len(tabs)} tab{'s' if len(tabs) != 1 else ''}.")
    return back(request, tabs[0])


@require_POST
def tab_rename(request: HttpRequest, tab_id: int) -> HttpResponse:
    tab = _tab(request, tab_id)
    title = request.POST.get("title", "").strip()[:80]
    if title:  # a blank name is ignored
        tab.title = title
        tab.save(update_fields=["title"])
    return back(request, tab)


@require_POST
def tab_close(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Close a tab; a run it started goes on (find it in the Runs panel)."""
    tab = _tab(request, tab_id)
    if tab.last_run and not tab.last_run.is_finished and request.POST.get("confirm") != "yes":
        messages.warning(request, "This tab is still running. Close it anyway?")
        return back(request, tab, confirm_close="1")
    tab.delete()
    return redirect("editor")


@require_POST
def tab_save(request: HttpRequest, tab_id: int) -> HttpResponse:
    tab = _tab(request, tab_id)
    name = tab.document.get("name") or tab.title
    if tab.graph is None:
        tab.graph = Graph.objects.create(owner=request.user, name=name[:200], document=tab.document)
        tab.save(update_fields=["graph"])
    else:
        tab.graph.document, tab.graph.name = tab.document, name[:200]
        tab.graph.save()
    messages.success(request, f"Saved {name}.")
    return back(request, tab)


@require_GET
def workspace_export(request: HttpRequest) -> HttpResponse:
    data, filename = workspace.export(request.user)
    response = HttpResponse(data, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# -- edits ----------------------------------------------------------------------------------

def _edit(request: HttpRequest, tab_id: int, change, new: str = "", **state) -> HttpResponse:
    """Apply one edit as one undo step; a refused edit (or one that grows the graph past its
    limits) says why and changes nothing.
    A change may return (document, id of what it made): ``new="select"`` selects that node,
    ``new="activate"`` makes that segment the active one."""
    tab = _tab(request, tab_id)
    try:
        result = change(tab.document)
        doc, made = result if isinstance(result, tuple) else (result, None)
        document.check_limits(doc, before=tab.document)
    except edits.EditError as exc:
        messages.error(request, str(exc))
        return back(request, tab)
    except document.DocumentError as exc:
        messages.error(request, " ".join(exc.problems))
        return back(request, tab)
    tab.apply(doc, made if new == "activate" else None)
    tab.save(update_fields=Tab.HISTORY_FIELDS)
    if new == "select":
        state["node"] = made
    return back(request, tab, **state)


def _number(request: HttpRequest, name: str, default: float = 0.0) -> float:
    try:
        return float(request.POST.get(name, default))
    except (TypeError, ValueError):
        return default


@require_POST
def node_add(request: HttpRequest, tab_id: int) -> HttpResponse:
    type_key, snap = request.POST.get("type", ""), Prefs.from_request(request).grid_snap

    def add(doc):  # without a drop point, new nodes step down the left edge
        y = _number(request, "y", 48 + 24 * (len(doc["nodes"]) % 12))
        return edits.add_node(doc, type_key, _number(request, "x", 48), y, snap)
    return _edit(request, tab_id, add, new="select")


@require_POST
def node_params(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    fields = {k: v for k, v in request.POST.items() if not k.startswith("_") and k != "csrfmiddlewaretoken"}
    for name in request.POST.getlist("_bools"):  # unchecked boxes send nothing
        fields.setdefault(name, "false")
    return _edit(request, tab_id, lambda doc: edits.set_params(doc, node_id, fields), node=node_id)


@require_POST
def node_grid(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    fill = request.POST.get("fill")
    cells = request.POST.getlist("cell")
    return _edit(request, tab_id, lambda doc: edits.set_grid(doc, node_id, cells=cells, fill=fill), node=node_id)


@require_POST
def node_move(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    snap = Prefs.from_request(request).grid_snap
    x, y = _number(request, "x"), _number(request, "y")
    return _edit(request, tab_id, lambda doc: edits.move_node(doc, node_id, x, y, snap))


@require_POST
def node_rename(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    return _edit(request, tab_id, lambda doc: edits.rename_node(doc, node_id, request.POST.get("label", "")))


@require_POST
def nodes_delete(request: HttpRequest, tab_id: int) -> HttpResponse:
    ids = set(request.POST.getlist("node"))
    return _edit(request, tab_id, lambda doc: edits.delete_nodes(doc, ids), node="")


@require_POST
def connect(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Wire source.port -> target.port; ``source`` may be 'node::port' (the no-JS select)."""
    post = request.POST
    source, source_port = post.get("source", ""), post.get("source_port", "")
    if "::" in source:
        source, source_port = source.split("::", 1)
    target, target_port = post.get("target", ""), post.get("target_port", "")
    if not source:  # the select's "not connected" choice
        return _edit(request, tab_id, lambda doc: _unwire(doc, target, target_port))
    return _edit(request, tab_id, lambda doc: edits.connect(doc, source, source_port, target, target_port))


def _unwire(doc, target, target_port):
    edge = next((e for e in doc["edges"] if e["target"] == target and e.get("targetHandle") == target_port
                 and not document.is_trigger(e)), None)
    return edits.disconnect(doc, edge["id"]) if edge else doc


@require_POST
def edge_delete(request: HttpRequest, tab_id: int, edge_id: str) -> HttpResponse:
    return _edit(request, tab_id, lambda doc: edits.disconnect(doc, edge_id))


@require_POST
def layout(request: HttpRequest, tab_id: int) -> HttpResponse:
    return _edit(request, tab_id, edits.auto_layout)


def _history(request: HttpRequest, tab_id: int, step) -> HttpResponse:
    tab = _tab(request, tab_id)
    if step(tab):
        tab.save(update_fields=Tab.HISTORY_FIELDS)
    return back(request, tab)


@require_POST
def undo(request: HttpRequest, tab_id: int) -> HttpResponse:
    return _history(request, tab_id, Tab.undo)


@require_POST
def redo(request: HttpRequest, tab_id: int) -> HttpResponse:
    return _history(request, tab_id, Tab.redo)


# -- segments -------------------------------------------------------------------------------

@require_POST
def segment_create(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Compare segment: exactly two selected nodes; the one further left is the head."""
    chosen = [n for n in request.POST.getlist("node") if n]
    if len(chosen) != 2 or chosen[0] == chosen[1]:
        messages.error(request, "Create segment needs exactly two selected nodes.")
        return back(request, _tab(request, tab_id))
    return _edit(request, tab_id, lambda doc: edits.create_segment(doc, *chosen), new="activate", node="")


@require_POST
def segment_remove(request: HttpRequest, tab_id: int, segment_id: str) -> HttpResponse:
    return _edit(request, tab_id, lambda doc: edits.remove_segment(doc, segment_id))


@require_POST
def segment_clear(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Clear active: remove the highlighted segment the Inspector is showing."""
    tab = _tab(request, tab_id)
    if not tab.active_segment:
        return back(request, tab)
    return _edit(request, tab_id, lambda doc: edits.remove_segment(doc, tab.active_segment))


@require_POST
def segment_activate(request: HttpRequest, tab_id: int, segment_id: str) -> HttpResponse:
    """Make another bubble the one the Inspector shows (focus only: no undo step)."""
    tab = _tab(request, tab_id)
    if any(g["id"] == segment_id for g in tab.document.get("segmentGroups", [])):
        tab.active_segment = segment_id
        tab.save(update_fields=["active_segment"])
    return back(request, tab, node="")


# -- blocks ---------------------------------------------------------------------------------

@require_POST
def collapse(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Collapse to subgraph: the selected nodes become one block (one undo step)."""
    ids = set(request.POST.getlist("node"))
    return _edit(request, tab_id, lambda doc: subgraphs.collapse(doc, ids), node="")


@require_POST
def expand(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    return _edit(request, tab_id, lambda doc: subgraphs.expand(doc, node_id), node="", inside="")


# -- settings -------------------------------------------------------------------------------

@require_POST
def tab_settings(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Recording & Inspection and Training Behavior: saved with the tab's graph."""
    def change(doc):
        try:
            return workspace.with_tab_settings(doc, request.POST)
        except document.DocumentError as exc:
            raise edits.EditError("; ".join(exc.problems)) from None
    return _edit(request, tab_id, change)


@require_POST
def prefs(request: HttpRequest) -> HttpResponse:
    """Compute device and the Editor rows: kept by this browser in a cookie."""
    old = Prefs.from_request(request)
    new = old.updated(request.POST)
    tab_id = request.POST.get("_tab")
    tab = _tab(request, tab_id) if tab_id else None
    if new.grid_snap and not old.grid_snap and tab is not None:  # turning it on snaps what is there
        tab.apply(edits.snap_all(tab.document))
        tab.save(update_fields=Tab.HISTORY_FIELDS)
    response = back(request, tab)
    new.save(response)
    return response


@require_POST
def weights_reset(request: HttpRequest, tab_id: int) -> HttpResponse:
    """Reset all weights now: asks first, then drops every kept layer of this tab."""
    tab = _tab(request, tab_id)
    if request.POST.get("confirm") != "yes":
        messages.warning(request, "Reset all persisted weights for this graph?")
        return back(request, tab, confirm_reset="1")
    messages.success(request, f"Persisted weights cleared ({service.reset_weights(tab.weights_scope)})")
    return back(request, tab)


# -- runs -----------------------------------------------------------------------------------

@require_POST
def run(request: HttpRequest, tab_id: int) -> HttpResponse:
    tab = _tab(request, tab_id)
    device = request.POST.get("device", "follow")
    overrides = {"device": Prefs.from_request(request).device if device == "follow" else device}
    try:
        started = service.start_run(request.user, tab.document, graph=tab.graph, overrides=overrides,
                                    weights_scope=tab.weights_scope)
    except service.RunRefused as exc:
        for problem in exc.problems:
            messages.error(request, problem)
        return back(request, tab)
    tab.last_run = started
    tab.save(update_fields=["last_run"])
    return back(request, tab, run=str(started.id))


def _run_action(request: HttpRequest, run_id: UUID, action) -> HttpResponse:
    """Stop or Delete from the Runs panel; a run in the wrong state says why."""
    try:
        action(get_visible(Run.objects, request.user, run_id))
    except service.RunConflict as exc:
        messages.info(request, str(exc))
    return _back_to(request)


@require_POST
def run_stop(request: HttpRequest, run_id: UUID) -> HttpResponse:
    return _run_action(request, run_id, service.cancel_run)


@require_POST
def run_delete(request: HttpRequest, run_id: UUID) -> HttpResponse:
    return _run_action(request, run_id, service.delete_run)


@require_POST
def run_open(request: HttpRequest, run_id: UUID) -> HttpResponse:
    """Inspect a finished run in its graph's tab (opening one if none shows that graph)."""
    target = get_visible(Run.objects, request.user, run_id)
    tab = visible_to(Tab.objects, request.user).filter(graph=target.graph).first() if target.graph else None
    if tab is None:
        tab_id = request.POST.get("_tab")
        tab = get_visible(Tab.objects, request.user, tab_id) if tab_id else None
    if tab is None:
        messages.error(request, "Open a tab first.")
        return redirect("editor")
    tab.last_run = target
    tab.save(update_fields=["last_run"])
    return redirect(editor_url(tab, run=str(target.id)))


def _back_to(request: HttpRequest) -> HttpResponse:
    tab_id = request.POST.get("_tab")
    tab = get_visible(Tab.objects, request.user, tab_id) if tab_id else None
    return back(request, tab)
