"""Everything the editor template shows, prepared from the tab, the request and the run.
Templates only lay this out; decisions live here or in the pure modules it calls."""
from __future__ import annotations

import threading
from dataclasses import replace
from itertools import islice
from typing import Any

from cachetools import LRUCache
from django.db.models import Q
from django.template.defaultfilters import filesizeformat, pluralize
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

import codefyui
from apps.graphs import document, edits, presets, segments, subgraphs
from apps.graphs.models import Graph, PackSwitch
from apps.graphs.nodes.base import SCRIPTS_OFF
from apps.graphs.nodes.packs import installed, missing_pack
from apps.inspector.capture_state import RunView
from apps.inspector.panel import TABS, Inspection, card_picture, segment_view
from apps.inspector.values import shape_text
from apps.runs import service
from apps.runs.engine import available_devices, resolve_device
from apps.runs.models import Run, ScriptNodes
from apps.runs.status import badge, progress_line
from apps.runs.store import get_store
from apps.stats.cache import get_cache as get_stats_cache
from codefyui.access import canonical_uuid, find_readable, visible_to

from . import centers, palette, tab_actions, workspace
from .canvas import layout
from .models import HistoryStep, Tab
from .prefs import Prefs
from .state import NODE_VIEW, PageState

SCRIPTS_OFF_CARD = "Script nodes are off on this server"
SCRIPTS_UNSAFE_CARD = "Script nodes cannot run on this server"
RUN_FILTERS = ("all", "running", "queued", "succeeded", "failed", "cancelled", "interrupted")


def editor_context(request, tab: Tab | None) -> dict[str, Any]:
    prefs = Prefs.from_request(request)
    run = inspected_run(request, tab)
    read_only = is_look(request, tab)
    context: dict[str, Any] = {
        "tab": tab, "prefs": prefs, "read_only": read_only,
        # a look over a student's shoulder shows that one tab, nothing of the teacher's own
        "tabs": [tab] if read_only else (
            visible_to(Tab.objects, request.user).select_related("last_run").defer("document")),
        "run": run, "server": server_usage(), "devices": device_choices(prefs),
        "state": PageState.of(request).but(node="", run=str(run.id) if run else "", inside=""),
        "confirm_close": request.GET.get("confirm_close") == "1",
        "confirm_reset": request.GET.get("confirm_reset") == "1",
        "tab_actions": tab_actions.for_tab(tab) if tab is not None and not read_only else [],
    }
    context.update(runs_panel(request, later=bool(tab) and bool(request.htmx), owner=tab.owner if read_only else None))
    enabled = PackSwitch.enabled_packs()
    context["pack_counts"] = centers.counts(enabled)
    if tab is None:
        context.update(lesson_groups=workspace.lesson_groups(), graphs=visible_to(Graph.objects, request.user))
        return context
    doc = tab.document
    block = open_block(request, doc)
    shown = subgraphs.inside_view(block)[0] if block else doc
    selected = request.GET.get("node", "")
    if selected and not any(n["id"] == selected for n in shown["nodes"]):
        selected = ""
    state = context["state"].but(node=selected, inside=block["id"] if block else "")
    selected_cls = edits.node_class(edits.find_node(shown, selected)) if selected else None
    view = side_view(state, run, node_panel_shown=bool(selected) and not block, cls=selected_cls)
    if selected:  # carried on, so a reload or the next node keeps the column on this tab
        state = state.but(view=view)
    query = request.GET.get("q", "")
    statuses = run.nodes if run else {}
    pictures = {} if block or run is None else card_pictures(request, doc, run)
    canvas = layout(shown, prefs.connection_style, "" if block else tab.active_segment, picture_room(pictures), enabled)
    for card in canvas.cards if not block else ():  # cards inside a block show no run status
        card.status = subgraphs.rolled_up_status(card.id, statuses) if card.type == "Subgraph" else statuses.get(card.id, {})
        card.badge = badge(card.status)
        card.picture = pictures.get(card.id)
        card.progress = progress_line(card.status.get("progress"))
    if any(card.script for card in canvas.cards) and (refusal := ScriptNodes.refusal()):
        notice = SCRIPTS_OFF_CARD if refusal == SCRIPTS_OFF else SCRIPTS_UNSAFE_CARD
        for card in canvas.cards:
            card.notice = notice if card.script else ""
    for edge in canvas.edges if not block else ():  # the shape that crossed each edge
        summary = (statuses.get(edge.source, {}).get("summary") or {}).get(edge.port) or {}
        edge.shape = shape_text(summary["shape"]) if "shape" in summary else ""
    context.update(
        doc=doc, canvas=canvas, state=state,
        inside_block={"id": block["id"], "label": document.node_label(block)} if block else None,
        selected=node_panel(doc, selected, enabled) if selected and not block else None,
        palette=palette_html(palette.categories(prefs.category_mode, enabled), prefs.tooltips),
        query=query, search=palette.quick_search(query, enabled) if "q" in request.GET else None,
        settings=document.run_settings(doc), can_undo=tab.can(HistoryStep.UNDO), can_redo=tab.can(HistoryStep.REDO),
        run_live=run is not None and not run.is_finished,
        kept_weights=service.kept_weights(tab.weights_scope),
    )
    active = segments.find(doc, tab.active_segment) if tab.active_segment and not block else None
    if active and segments.members_of(doc, active) and not (context["selected"] and view == NODE_VIEW):
        # an active segment beats a selected node's Inspector (the node's own tab stays one click away)
        context["segment"] = segment_view(inspection(request, doc, active["tailNodeId"], run), active)
    elif selected and view != NODE_VIEW:
        context["inspector"] = inspector(request, doc, selected, run, view)
    if context["selected"] is not None:  # its edges, as a list the keyboard reaches (the drawn ones are mouse-only)
        context["connections"] = [e for e in canvas.edges if not e.trigger and selected in (e.source, e.target)]
    context["side_tabs"] = side_tabs(view, node_panel_shown=context["selected"] is not None, cls=selected_cls)
    context["segment_choices"] = [(n["id"], document.node_label(n)) for n in doc["nodes"] if n["type"] != "note"]
    context["plugin_panel"] = None if read_only else plugin_panel(
        prefs, enabled, edits.find_node(shown, selected)["type"] if selected else None)
    return context


def plugin_panel(prefs: Prefs, enabled: frozenset[str], node_type: str | None) -> dict[str, Any] | None:
    """The plugin panel this browser keeps open (docked in the right-hand column or floating
    over the canvas), with what its pack shows for the selected node; None when it is closed,
    or its pack is gone or off."""
    pack = installed().get(prefs.panel)
    if pack is None or not pack.is_plugin or pack.name not in enabled:
        return None
    shown = pack.panel_context(node_type) if pack.panel_context else {}
    return {"pack": pack, "template": pack.panel, "docked": prefs.panel_docked, **shown}


def card_pictures(request, doc: dict[str, Any], run: Run) -> dict[str, Any]:
    """node id -> the picture of its output in the run, for the nodes that have one."""
    ins = inspection(request, doc, "", run)
    pictures = {n["id"]: card_picture(ins, n) for n in doc["nodes"] if run.nodes.get(n["id"], {}).get("status")
                in ("completed", "cached") or n["type"] == subgraphs.TYPE}
    return {node_id: p for node_id, p in pictures.items() if p is not None}


def picture_room(pictures: dict[str, Any]) -> dict[str, float]:
    """node id -> the room its picture takes on its card (the picture says: ``card_h``)."""
    return {node_id: p.card_h for node_id, p in pictures.items()}


def card_heights(request, doc: dict[str, Any], run: Run | None) -> dict[str, float]:
    """node id -> its card's height as the canvas draws it (ports, and the run's picture on
    it): what Auto layout stacks, so no card overlaps the one under it."""
    pictures = card_pictures(request, doc, run) if run is not None else {}
    return {card.id: card.h for card in layout(doc, pictured=picture_room(pictures)).cards}


def run_view(run: Run | None) -> RunView | None:
    if run is None:
        return None
    return RunView(finished=run.is_finished, recorded=bool(run.options.get("record", True)), nodes=run.nodes,
                   log=tuple(run.log))


def inspection(request, doc: dict[str, Any], node_id: str, run: Run | None) -> Inspection:
    """The Inspector's view of a node, with the slices and windows the page asked for."""
    slices, offsets = {}, {}
    for key, value in request.GET.items():
        numbers = [int(m[1]) for p in value.split(",") if (m := document.WHOLE_NUMBER.fullmatch(p))]
        if key.startswith("s.") and numbers:
            slices[key[2:]] = numbers
        elif key.startswith("o.") and len(numbers) == 2:
            offsets[key[2:]] = (numbers[0], numbers[1])
    block = open_block(request, doc)
    shown, fed = subgraphs.inside_view(block) if block else (doc, {})
    epoch = document.WHOLE_NUMBER.fullmatch(request.GET.get("epoch", ""))
    return Inspection(doc=shown, node_id=node_id, run_id=str(run.id) if run else None, run=run_view(run),
                      store=get_store(), record_now=document.run_settings(doc)["record_outputs"],
                      after_run=block is not None, block_inputs=fed, slices=slices, offsets=offsets,
                      epoch=int(epoch[1]) if epoch else None,
                      step=int(m[1]) if (m := document.WHOLE_NUMBER.fullmatch(request.GET.get("step", ""))) else 1)


def open_block(request, doc: dict[str, Any]) -> dict[str, Any] | None:
    """The block whose inside the page shows (Enter subgraph), if any."""
    inside = request.GET.get("inside", "")
    return next((n for n in doc["nodes"] if n["id"] == inside and n["type"] == subgraphs.TYPE), None) if inside else None


def inspector(request, doc: dict[str, Any], node_id: str, run: Run | None, view: str) -> dict[str, Any]:
    tab, ins = TABS[view], inspection(request, doc, node_id, run)
    return {"tabs": list(TABS.values()), "current": tab, "template": tab.template,
            "label": document.node_label(edits.find_node(ins.doc, node_id)), **tab.context(ins)}


def side_view(state: PageState, run: Run | None, node_panel_shown: bool, cls=None) -> str:
    """Which tab of the right-hand column shows: the one asked for (if the node has it), else
    the Inspector's Forward once there is a run to read, else the node's parameters."""
    view = state.view or ("forward" if run else NODE_VIEW)
    if view in TABS and not TABS[view].shows_for(cls):
        view = "forward"
    return "forward" if view == NODE_VIEW and not node_panel_shown else view


def side_tabs(current: str, node_panel_shown: bool, cls=None) -> list[dict[str, Any]]:
    """The right-hand column's tabs: Node (when its panel can show), then the Inspector's
    that the node has (Training only for a node that trains)."""
    tabs = [{"slug": NODE_VIEW, "title": "Node", "inspector": False}] if node_panel_shown else []
    tabs += [{"slug": t.slug, "title": t.title, "inspector": True} for t in TABS.values() if t.shows_for(cls)]
    for t in tabs:
        t["current"] = t["slug"] == current
    return tabs


def is_look(request, tab: Tab | None) -> bool:
    """Whether the page shows another user's tab: a teacher's look over a student's shoulder,
    read-only (``access.readable_to`` let it through; every edit still asks ``visible_to``)."""
    return tab is not None and tab.owner_id != request.user.pk


def inspected_run(request, tab: Tab | None) -> Run | None:
    """The run the page inspects: named in the page's state (a reload starts without one), as
    its recorder knows it now (the row is written at most every 0.25 s); never a run of another
    graph (``Tab.shows``), which would paint its statuses and log onto this one."""
    run = named_run(request, request.GET.get("run", ""), tab.owner_id) if tab is not None else None
    return run if run is not None and tab.shows(run) else None


def named_run(request, named: str, owner_id: int | None = None) -> Run | None:
    """The run a page's state names, if this user may read it and it is ``owner_id``'s (by
    default the user's own), as its recorder knows it now."""
    run_id = canonical_uuid(named)
    if run_id is None:
        return None
    run = find_readable(Run.objects, request.user, run_id)
    if run is None or run.owner_id != (request.user.pk if owner_id is None else owner_id):
        return None
    return service.current(run)


def node_panel(doc: dict[str, Any], node_id: str, enabled: frozenset[str] | None = None) -> dict[str, Any] | None:
    node = edits.find_node(doc, node_id)
    cls = edits.node_class(node)
    missing = missing_pack(node["type"], enabled) if node["type"] != document.NOTE_TYPE else None
    if cls is None:  # a note, or a node of a pack this server lacks
        return {"node": node, "cls": None, "label": document.node_label(node) if missing else "Note",
                "missing": missing, "moves": edits.nudges(node)}
    values = node["data"].get("params", {})
    coerced = cls.coerce_params(values)[0]
    if cls.subgraph:  # a preset's block shows the inner params the preset exposes
        params = [{"param": replace(p, name=f"{inner['id']}.{p.name}"), "label": label, "choices": p.options,
                   "value": inner.get("data", {}).get("params", {}).get(p.name, p.default)}
                  for inner, p, label in edits.block_params(node)]
    else:  # grids, layers and a script's code have editors of their own
        params = [{"param": p, "value": values.get(p.name, p.default), "choices": p.options}
                  for p in cls.params if p.in_form]
    wired = {e["targetHandle"]: f"{e['source']}::{e['sourceHandle']}" for e in doc["edges"]
             if e["target"] == node_id and not document.is_trigger(e)}
    inputs = [{"port": p, "current": wired.get(p.name, ""),
               "options": edits.compatible_sources(doc, node_id, p.name)} for p in cls.input_ports(coerced)]
    return {"node": node, "cls": cls, "label": document.node_label(node), "params": params, "inputs": inputs,
            "moves": edits.nudges(node), "missing": missing,
            "outputs": cls.output_ports(coerced), "grid": grid(node, cls, coerced),
            "entry_targets": [(n["id"], document.node_label(n)) for n in doc["nodes"]
                              if n["id"] != node_id and edits.node_class(n) is not None]
            if any(p.type == "TRIGGER" for p in cls.outputs) else None,
            "triggers": [{**e, "label": document.node_label(edits.find_node(doc, e["target"]))} for e in doc["edges"]
                         if document.is_trigger(e) and e["source"] == node_id]}


def grid(node: dict[str, Any], cls, params: dict[str, Any]) -> dict[str, Any] | None:
    """TensorInput's values grid: rows of (index, value) when it can be edited, else why not.
    It is there whatever the value_mode: the page shows it as soon as explicit is chosen, and
    applying it sets explicit, so typing values is one step."""
    if edits.grid_param(cls) is None:
        return None
    shape = edits.grid_shape(node)
    if shape is None:
        return {"editable": False, "reason": "The shape is not valid, so there is no grid."}
    count = 1
    for s in shape:
        count *= s
    if count > edits.GRID_EDIT_MAX_CELLS:
        return {"editable": False, "reason": f"This shape holds {count} values; the grid can edit at most "
                                             f"{edits.GRID_EDIT_MAX_CELLS}. Use another value_mode."}
    flat = (edits.flat_values(params.get("values", [])) + [0.0] * count)[:count]
    width = shape[-1]
    rows = [[(i, flat[i]) for i in range(r, min(r + width, count))] for r in range(0, count, width)]
    return {"editable": True, "shape": shape, "rows": rows, "count": count,
            "explicit": params.get(edits.EXPLICIT_MODE[0]) == edits.EXPLICIT_MODE[1]}


def device_choices(prefs: Prefs) -> dict[str, Any]:
    """The Compute device row and the select next to Run, worded from what the server does."""
    available = available_devices()
    used, warning = resolve_device(prefs.device)
    follow = prefs.device.upper() if prefs.device == "cpu" else prefs.device
    if warning:
        follow = f"{prefs.device} → CPU"
    return {"available": available, "preferred": prefs.device, "missing": prefs.device not in available,
            "warning": warning, "follow_label": f"Follow Settings ({follow})", "used": str(used)}


def server_facts() -> dict[str, Any]:
    """What this server is and holds: version, counts, each in-memory store's usage against
    its budget (the Settings popover's This Server section and GET /api/health)."""
    return {"version": codefyui.__version__, "nodes": len(palette.catalogue()), "presets": len(presets.available()),
            "run_workers": service.worker_usage(),
            "stores": {"run_output_store": get_store().usage(), "execution_cache": service.cache_usage(),
                       "stats_cache": get_stats_cache().usage()}}


def server_usage() -> dict[str, Any]:
    """This Server, worded: the runs computing, paused and queued on the run workers, and each
    store's usage against its budget."""
    facts = server_facts()
    runs, cache, stats = (facts["stores"][k] for k in ("run_output_store", "execution_cache", "stats_cache"))
    budget = lambda n: filesizeformat(n) if n else "unbounded"  # noqa: E731
    w = facts["run_workers"]
    where = (f"{w['workers']} run worker{pluralize(w['workers'])} ({w['idle']} idle)" if w["workers"]
             else "run in the server process")
    return {**facts, "stores": [
        ("Runs", f"{w['computing']} computing, {w['paused']} paused for others, {w['queued']} queued; {where}"),
        ("Recorded outputs", f"{runs['runs']} of {runs['max_runs']} runs, "
                             f"{filesizeformat(runs['bytes'])} of {budget(runs['max_bytes'])}"),
        ("Execution cache", f"{cache['entries']} result{pluralize(cache['entries'])} of {cache['scopes']} "
                            f"user{pluralize(cache['scopes'])}, "
                            f"{filesizeformat(cache['bytes'])} of {filesizeformat(cache['max_bytes'])}"),
        ("Stats cache", f"{stats['entries']} summar{pluralize(stats['entries'], 'y,ies')}, "
                        f"{filesizeformat(stats['bytes'])} of {budget(stats['max_bytes'])}"),
    ]}


_PALETTES: LRUCache[tuple, tuple[list, str]] = LRUCache(maxsize=16)   # key -> (the entries, kept alive; their HTML)
_palettes_lock = threading.Lock()   # LRUCache's reads reorder it: every use holds this


def palette_html(categories: list[tuple[str, list]], tooltips: bool) -> str:
    """The sidebar's categories (editor/_palette.html), rendered once per distinct list and
    kept: every student with the same settings and packs sees the same ~250 entries, and
    rendering them was a third of each click's time (bench/inspector_render.py). Entries are
    declarations that never change, so their identity is the key (and the kept list keeps
    each alive, so an identity is never reused while its HTML is kept)."""
    key = (bool(tooltips), tuple((name, tuple(map(id, entries))) for name, entries in categories))
    with _palettes_lock:
        if (kept := _PALETTES.get(key)) is not None:
            return kept[1]
    html = mark_safe(render_to_string("editor/_palette.html", {"categories": categories,
                                                                 "prefs": {"tooltips": bool(tooltips)}}))
    with _palettes_lock:
        _PALETTES[key] = (categories, html)
    return html


def runs_panel(request, later: bool = False, owner=None) -> dict[str, Any]:
    """The Runs panel's runs (at most 50, as the filter asks). ``later``: an htmx re-render of
    the editor, whose panel is closed unless a filter is chosen: its runs are not read now but
    fetched when it opens (``views.runs.runs_body``). Every action re-renders the editor, and a
    class's students each have tens of runs: their rows were a fifth of the page's time."""
    wanted = request.GET.get("runs", "all")
    wanted = wanted if wanted in RUN_FILTERS else "all"
    if later and wanted == "all":
        return {"runs_filter": wanted, "runs_later": True}
    runs = visible_to(Run.objects, owner or request.user)   # owner: a look's student (read_tab let it through)
    if wanted != "all":
        # An unfinished run's row may be up to 0.25 s behind its recorder (a started run
        # still reads queued): those rows are filtered on what the recorder knows.
        runs = runs.filter(Q(status=wanted) | Q(status__in=Run.UNFINISHED))
    # Each run as its recorder knows it now.
    current = (service.current(run) for run in runs.iterator(chunk_size=50))
    runs = list(islice((run for run in current if wanted in ("all", run.status)), 50))
    for run in runs:  # "2nd in the queue"
        run.queue_place = service.queue_place(run) if run.status == Run.Status.QUEUED else None
    return {"runs_filter": wanted, "run_filters": RUN_FILTERS, "runs": runs}
