"""The full-size viewers' pages (reference §14) and plotly's script.

Without JavaScript a viewer is a page of its own: a large server-rendered picture, the scatter's
60 nearest labels and its filter as a GET form, pan and zoom as links (every number read from
the query is bounded, apps.inspector.viewers.view_query). With JavaScript the card's button opens
a dialog over the canvas (static/js/viewers.js) holding an <iframe> of the viewer's frame page
(viewer_frame): the captured numbers as JSON in the page, plotly.min.js (served here from the
installed plotly package, never committed) and static/js/viewer-frame.js, which draws them.
Only that frame page's response relaxes the Content-Security-Policy, as plotly needs
(FRAME_CSP); the editor's own pages keep the strict one.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import plotly
import torch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from csp.constants import SELF
from csp.decorators import csp_replace, csp_update
from django.views.decorators.cache import cache_control
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_GET

from apps.graphs import document, edits
from apps.inspector import capture_state as cs
from apps.inspector import viewers as v
from apps.runs.capture_api import CAPTURE_HINT
from apps.runs.store import StoreUnreachable, get_store

from ..context import inspected_run, inspection
from ..models import Tab
from ..state import PageState
from .page import read_tab

PLOTLY = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
PAGE_W, PAGE_H = 960, 600           # the no-JS scatter's plot
PAGE_PANEL_SHARE = 900              # px of a no-JS heatmap row the panels share

# What plotly 4 needs, on the frame page alone: it writes style attributes (d3), draws a
# heatmap as a data: image, and creates empty <style> elements that it fills through the CSSOM
# (the hash is the empty string's: no style text may come with them). No eval: the SVG traces
# it draws here use none.
EMPTY_STYLE = "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
FRAME_CSP = {"style-src-elem": [SELF, EMPTY_STYLE], "style-src-attr": ["'unsafe-inline'"], "img-src": [SELF, "data:"]}
FRAME_ANCESTORS = {"frame-ancestors": [SELF]}   # the editor's dialog frames it; no other site may


@require_GET
@cache_control(private=True, max_age=7 * 24 * 3600)
def plotly_js(request: HttpRequest) -> HttpResponse:
    """plotly.min.js from the installed plotly package (its version names the cache)."""
    if not PLOTLY.is_file():
        raise Http404("plotly.min.js is not in the installed plotly package: an administrator can reinstall plotly")
    response = HttpResponse(PLOTLY.read_bytes(), content_type="text/javascript; charset=utf-8")
    response["X-Plotly-Version"] = plotly.__version__
    return response


@cache
def plotly_map_style_id() -> str:
    """The id of the <style> plotly's bundled map library writes at load (its own stylesheet, text
    the CSP refuses) unless an element of that id is already there: the frame page puts one, as
    no viewer draws a map. "" when the installed bundle has none."""
    if not PLOTLY.is_file():
        return ""
    found = re.search(rb'getElementById\("([0-9a-f]{32,64})"\)\)\{var \w+=document\.createElement\("style"\)',
                      PLOTLY.read_bytes())
    return found.group(1).decode() if found else ""


def _node(tab: Tab, node_id: str) -> tuple[dict[str, Any], v.ViewerSpec]:
    try:
        node = edits.find_node(tab.document, node_id)
    except edits.EditError:
        raise Http404("no such node") from None
    cls = edits.node_class(node)
    spec = v.spec_of(cls.type) if cls else None
    if spec is None:
        raise Http404("this node has no viewer")
    return node, spec


def _value(ins, run, node_id: str, port: str, gone: str) -> tuple[Any, str]:
    """(captured value, "") or (None, the status that says why there is none)."""
    if run is None:
        return None, gone
    value = ins.lookup(node_id, port)
    if value is cs.UNREACHABLE_STORE:
        return None, v.couldnt_load("the capture store cannot be reached now; try again in a moment")
    if value is cs.MISSING:
        try:
            held = get_store().has_run(str(run.id))
        except StoreUnreachable:
            held = False
        if not held:
            return None, gone
        return None, v.couldnt_load(f"port '{port}' was not captured in this run. {CAPTURE_HINT}")
    if value is cs.NOT_KEPT:
        return None, v.couldnt_load(f"port '{port}' was not kept: the run outgrew the capture store's budget. "
                                    "Re-run with a shorter sequence.")
    return value, ""


def _labels(ins, node_id: str, port: str) -> list | None:
    if not port:
        return None
    found = ins.lookup(node_id, port)
    return list(found) if isinstance(found, (list, tuple)) else None


def _captured(request: HttpRequest, tab_id: int, node_id: str, look: str = ""):
    """The viewer's node (owner-checked: a stranger gets 404), its spec, the inspection, and the
    captured value or the status that says why there is none."""
    tab = read_tab(request, tab_id, look)
    node, spec = _node(tab, node_id)
    run = inspected_run(request, tab)
    ins = inspection(request, tab.document, node_id, run)
    gone = v.SCATTER_GONE if spec.kind == "scatter" else v.GONE
    value, status = _value(ins, run, node_id, spec.port, gone)
    return tab, node, spec, ins, value, status


@require_GET
@xframe_options_sameorigin
@csp_update(FRAME_CSP)
@csp_replace(FRAME_ANCESTORS)
def viewer_frame(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    """The viewer the editor's dialog frames: the numbers as JSON (json_script) and plotly."""
    tab, node, spec, ins, value, status = _captured(request, tab_id, node_id)
    if status:
        data: dict[str, Any] = {"status": status}
    elif spec.kind == "scatter":
        data = v.scatter_data(value, _labels(ins, node_id, spec.rows))
    else:
        colormap = v.colormap_name(request.GET.get("colormap") or edits.params_of(node).get("colormap"))
        data = v.heatmap_data(value, _labels(ins, node_id, spec.rows), _labels(ins, node_id, spec.cols),
                              mask=spec.mask, colormap=colormap)
    return render(request, "inspector/viewers/frame.html", {
        "spec": spec, "label": document.node_label(node), "data": data, "map_style_id": plotly_map_style_id(),
        "close_hint": v.CLOSE_HINT, "scatter_hint": v.SCATTER_HINT})


@require_GET
def viewer(request: HttpRequest, tab_id: int, node_id: str) -> HttpResponse:
    tab, node, spec, ins, value, status = _captured(request, tab_id, node_id, look="viewer")
    state = PageState.of(request).but(node="", view="", panel="", inside="")
    context: dict[str, Any] = {"tab": tab, "state": state, "spec": spec, "node_id": node_id,
                               "label": document.node_label(node),
                               "back": state.url(f"/editor/{tab.pk}/", node=node_id)}
    if spec.kind == "scatter":
        context.update(_scatter_context(request, state, value, _labels(ins, node_id, spec.rows), status))
    else:
        context.update(_heatmap_context(request, node, spec, value, _labels(ins, node_id, spec.rows),
                                        _labels(ins, node_id, spec.cols), status))
    return render(request, "inspector/viewers/page.html", context)


def _heatmap_context(request, node, spec, value, rows, cols, status: str) -> dict[str, Any]:
    params = edits.params_of(node)
    colormap = v.colormap_name(request.GET.get("colormap") or params.get("colormap"))
    out: dict[str, Any] = {"colormap": colormap, "colormaps": list(v.COLORMAPS), "status": status}
    if status:
        return out
    if not isinstance(value, torch.Tensor):
        out["status"] = v.expected_tensor(value)
        return out
    t = value[0] if value.dim() == 4 else value
    heads = t.shape[0] if t.dim() == 3 else 1
    columns = min(heads, 2)
    seq = t.shape[-1] if t.dim() >= 1 else 0
    if t.numel() > v.MAX_POINTS:   # as the viewer fetches (max_elements): what one page may draw
        out["status"] = v.couldnt_load(f"the weights have {t.numel():,} numbers, more than {v.MAX_POINTS:,}. "
                                       "Re-run with a shorter sequence.")
        return out
    panel = v.full_panel_px(seq, PAGE_PANEL_SHARE / columns)
    picture = v.heatmap(value, rows, cols, mask=spec.mask, colormap=colormap, panel_px=panel, columns=columns,
                        font=12 if seq <= 12 else 10)
    if picture.message:
        out["status"] = picture.message
        return out
    out["picture"] = picture
    return out


def _scatter_context(request, state: PageState, value, labels, status: str) -> dict[str, Any]:
    out: dict[str, Any] = {"status": status}
    if status:
        return out
    try:
        points = v.points_of(value)
    except v.ViewerError as exc:
        out["status"] = str(exc)
        return out
    names = v.point_labels(labels, len(points))
    centre, zoom = v.view_query(points, request.GET)
    hidden = v.hidden_set(request.GET.get("hidden"), len(points))
    text = request.GET.get("filter", "")[:200]
    order = v.nearest(points, centre, names, "", n=len(points))  # every point, nearest the centre first
    listed = v.nearest(points, centre, names, text) if text.strip() else order[:v.NEAREST]
    visible = [i for i in order if i not in hidden][:v.NEAREST]
    picture = v.scatter(value, labels, width=PAGE_W, height=PAGE_H, centre=centre, zoom=zoom, hidden=hidden,
                        named=visible, inline=False, font=12)
    scale = v.fit_scale(points, PAGE_W, PAGE_H) * zoom / 100
    step_x, step_y = PAGE_W / scale / 4, PAGE_H / scale / 4
    cx, cy = centre
    here = {"cx": _n(cx), "cy": _n(cy), "zoom": _n(zoom), "filter": text,
            "hidden": ",".join(str(i) for i in sorted(hidden))}

    def link(**changes: Any) -> str:
        return "?" + state.query(**{**here, **{k: str(val) for k, val in changes.items()}})

    def toggled(i: int) -> str:
        return ",".join(str(j) for j in sorted(hidden ^ {i}))

    out.update(
        picture=picture, filter=text, here=here,
        rows=[{"index": i, "name": names[i], "hidden": i in hidden,
               "centre": link(cx=_n(points[i][0]), cy=_n(points[i][1])), "toggle": link(hidden=toggled(i))}
              for i in listed],
        zoom_out=link(zoom=_n(v.clamp_zoom(zoom / v.ZOOM_STEP))), zoom_in=link(zoom=_n(v.clamp_zoom(zoom * v.ZOOM_STEP))),
        reset=link(cx="", cy="", zoom=""), show_all=link(hidden="") if hidden else "",
        pans=[("← Left", link(cx=_n(cx - step_x))), ("→ Right", link(cx=_n(cx + step_x))),
              ("↑ Up", link(cy=_n(cy + step_y))), ("↓ Down", link(cy=_n(cy - step_y)))],
        hidden_fields={k: val for k, val in here.items() if k != "filter" and val},
    )
    return out


def _n(x: float) -> str:
    return f"{x:.6g}"

