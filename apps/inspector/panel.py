"""The Inspector's rows and tabs for one node of one run.

A tab is a small class: a title, a template and ``context()`` (in the spirit of
django-debug-toolbar's panels). Rows read captures only through the store interface and
take their message from ``capture_state.row_state``.
"""
from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import torch
from cachetools import LRUCache

from apps.graphs import document, edits, segments, subgraphs
from apps.graphs.nodes.base import PORT_COLOURS
from apps.runs.engine import gradients as gr
from apps.runs.store import CaptureStore, StoreUnreachable

from apps.runs.status import progress_line
from codefyui import heavy

from . import capture_state as cs
from . import training, viewers
from .pictures import Picture, picture
from .values import Health, fmt, health, shape_text, view


@dataclass
class Inspection:
    """What the panel inspects: a node of a tab's document, in a run, through a store."""

    doc: dict[str, Any]
    node_id: str
    run_id: str | None
    run: cs.RunView | None
    store: CaptureStore
    record_now: bool
    after_run: bool = False                                         # inside a block: wait for the run's end
    block_inputs: dict[str, list[str]] = field(default_factory=dict)  # inner node -> ports fed through the block
    slices: dict[str, list[int]] = field(default_factory=dict)      # row key -> leading indices
    offsets: dict[str, tuple[int, int]] = field(default_factory=dict)  # row key -> (row, col) of the window
    serials: dict[tuple[str, str], int] = field(default_factory=dict)  # (node, port) -> capture serial seen
    epoch: int | None = None                                        # the Training pane's chosen epoch
    step: int = 1                                                   # the Steps tab's row, counted from 1

    def lookup(self, producer: str, port: str) -> Any:
        if self.run_id is None:
            return cs.MISSING
        try:
            capture = self.store.get(self.run_id, producer, port)
            if capture is None:
                return cs.NOT_KEPT if self.store.refused(self.run_id, producer, port) else cs.MISSING
        except StoreUnreachable:
            return cs.UNREACHABLE_STORE
        self.serials[(producer, port)] = capture.serial
        return capture.value


@dataclass
class Row:
    key: str            # "in.<edge id>" or "out.<port>": names the row in URLs
    side: str           # in | out
    label: str
    type: str
    producer: str
    port: str
    state: cs.RowState
    view: Any = None
    health: Health | None = None     # a gradient's badge: ‖g‖ and its verdict

    @property
    def colour(self) -> str:
        return PORT_COLOURS.get(self.type.upper(), PORT_COLOURS["ANY"])


def forward_rows(ins: Inspection) -> tuple[list[Row], list[Row], str]:
    """Inputs above outputs, and the divider's chip (a shape change) if any."""
    doc, node = ins.doc, edits.find_node(ins.doc, ins.node_id)
    cls = edits.node_class(node)
    labels = {n["id"]: document.node_label(n) for n in doc["nodes"]}
    inputs = []
    for e in doc["edges"]:
        if e["target"] != ins.node_id or document.is_trigger(e):
            continue
        out_type = edits.port_type(edits.find_node(doc, e["source"]), e["sourceHandle"], "out")
        inputs.append(_row(ins, f"in.{e['id']}", "in", f"{labels[e['source']]}.{e['sourceHandle']}", out_type,
                           e["source"], e["sourceHandle"]))
    params = edits.params_of(node)
    for port in ins.block_inputs.get(ins.node_id, []):  # fed from outside the open block
        inputs.append(_row(ins, f"block.{port}", "in", port, edits.port_type(node, port, "in"),
                           ins.node_id, port, from_block=True))
    outputs = [] if cls is None else [
        _row(ins, f"out.{p.name}", "out", p.name, p.type, *_producer(node, p.name))
        for p in cls.output_ports(params) if p.type != "TRIGGER"]
    chip, compare = "", None
    if len(inputs) == 1 and len(outputs) == 1:
        a, b = inputs[0].state.value, outputs[0].state.value
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if a.shape == b.shape:  # heat: colour what changed, in the slice shown
                compare = inputs[0]
            else:
                chip = f"{shape_text(a.shape)} → {shape_text(b.shape)}"
    for row in inputs + outputs:
        if row.state.has_value:
            row.view = _view(ins, row, compare if row.side == "out" else None)
    return inputs, outputs, chip


def _row(ins: Inspection, key: str, side: str, label: str, type_: str, producer: str, port: str,
         from_block: bool = False) -> Row:
    state = cs.row_state(ins.run, producer, ins.lookup(producer, port), record_now=ins.record_now,
                         after_run=ins.after_run, from_block=from_block)
    return Row(key, side, label, type_, producer, port, state)


def _producer(node: dict[str, Any], port: str) -> tuple[str, str]:
    """Who produced an output: the node itself, or for a block the inner node behind the port."""
    if node["type"] != "Subgraph":
        return node["id"], port
    inner = next((p for p in subgraphs.definition(node)["outputs"] if p["name"] == port), None)
    return (f"{node['id']}/{inner['node']}", inner["port"]) if inner else (node["id"], port)


def _view(ins: Inspection, row: Row, compare: Row | None = None, magnitude: bool = False):
    """A row's value view. Captures never change, so a view is cached by the capture's write
    serial and what was asked of it (slice, window, and the compared capture for heat)."""
    index, offset = ins.slices.get(row.key), ins.offsets.get(row.key, (0, 0))
    serial = ins.serials.get((row.producer, row.port))
    against = ins.serials.get((compare.producer, compare.port)) if compare else None
    key = (ins.run_id, serial, tuple(index or ()), offset, against, magnitude)
    if serial is not None and (hit := _kept_view(key)) is not None:
        return hit
    heavy.ahead_of(row.state.value, compare.state.value if compare else None)
    made = view(row.state.value, index, offset, compare.state.value if compare else None, magnitude)
    if serial is not None:
        _keep_view(key, made)
    return made


_VIEWS: LRUCache = LRUCache(maxsize=128)   # rendered value views: a class looking at one run asks for the same grid
_views_lock = threading.Lock()   # views are made on several threads, and an LRUCache's reads reorder it


def _kept_view(key):
    with _views_lock:
        return _VIEWS.get(key)


def _keep_view(key, made) -> None:
    with _views_lock:
        _VIEWS[key] = made


def segment_view(ins: Inspection, group: dict[str, Any]) -> dict[str, Any]:
    """The segment replaces the node view: every edge entering the head-to-tail set, and the
    tail's outputs, under the same rules as node rows (no heat, no tabs)."""
    doc = ins.doc
    labels = {n["id"]: document.node_label(n) for n in doc["nodes"]}
    members = segments.members_of(doc, group)
    inputs = []
    for e in segments.entering_edges(doc, members):
        out_type = edits.port_type(edits.find_node(doc, e["source"]), e["sourceHandle"], "out")
        inputs.append(_row(ins, f"in.{e['id']}", "in", f"→ {labels[e['target']]}.{e['targetHandle']}", out_type,
                           e["source"], e["sourceHandle"]))
    tail = edits.find_node(doc, group["tailNodeId"])
    tail_cls = edits.node_class(tail)
    outputs = [_row(ins, f"out.{p.name}", "out", f"{labels[tail['id']]}.{p.name}", p.type, tail["id"], p.name)
               for p in tail_cls.output_ports(edits.params_of(tail)) if p.type != "TRIGGER"] if tail_cls else []
    for row in inputs + outputs:
        if row.state.has_value:
            row.view = _view(ins, row)
    return {"group": group, "head": labels[group["headNodeId"]], "tail": labels[group["tailNodeId"]],
            "inputs": inputs, "outputs": outputs}


def card_picture(ins: Inspection, node: dict[str, Any]) -> Picture | None:
    """The picture on a node's card: its first data output as captured in the run, cached by
    the capture's serial as the Inspector's views are."""
    cls = edits.node_class(node)
    if cls is not None and (spec := viewers.spec_of(cls.type)) is not None:  # the viewers' nodes
        return _viewer_picture(ins, node, spec)
    port = next((p.name for p in cls.output_ports(edits.params_of(node)) if p.type != "TRIGGER"), None) if cls else None
    if port is None:
        return None
    producer, inner = _producer(node, port)
    value = ins.lookup(producer, inner)
    serial = ins.serials.get((producer, inner))
    if serial is None:
        return None
    key = ("picture", ins.run_id, serial)
    if (hit := _kept_view(key)) is None:
        heavy.ahead_of(value)
        hit = picture(value) or False   # False: looked at, nothing to draw
        if hit:
            hit.key = f"{ins.run_id}-{serial}"
            hit.run, hit.node, hit.port = ins.run_id, producer, inner
        _keep_view(key, hit)
    return hit or None


def _viewer_picture(ins: Inspection, node: dict[str, Any], spec: viewers.ViewerSpec):
    """A viewer node's card picture (apps.inspector.viewers): its heatmap or scatter and the
    button that opens the full-size viewer, cached by the captures' serials."""
    value = ins.lookup(node["id"], spec.port)
    serial = ins.serials.get((node["id"], spec.port))
    if serial is None:
        return None
    found = {p: ins.lookup(node["id"], p) for p in (spec.rows, spec.cols) if p}
    labels = {p: v if isinstance(v, (list, tuple)) else None for p, v in found.items()}
    params = edits.params_of(node)
    key = ("viewer", ins.run_id, serial, *(ins.serials.get((node["id"], p)) for p in found),
           str(params.get("colormap", "")))
    if (hit := _kept_view(key)) is None:
        heavy.ahead_of(value)
        hit = viewers.card_picture(spec, value, labels.get(spec.rows), labels.get(spec.cols), params)
        hit.key = f"{ins.run_id}-{'-'.join(str(k) for k in key[2:])}"
        _keep_view(key, hit)
    return hit


def gradient_rows(ins: Inspection) -> tuple[list[Row], list[Row]]:
    """The Backward tab's Output gradients (one per output port) and Weight gradients (one per
    parameter), as the run's gradient index for the node lists them."""
    index = ins.lookup(ins.node_id, gr.INDEX)
    index = index if isinstance(index, dict) else {"outputs": [], "weights": []}
    return ([_gradient_row(ins, f"grad.{port}", port, gr.output_port(port)) for port in index["outputs"]],
            [_gradient_row(ins, f"wgrad.{name}", name, gr.weight_port(name)) for name in index["weights"]])


def _gradient_row(ins: Inspection, key: str, label: str, port: str) -> Row:
    state = cs.gradient_state(ins.run, ins.node_id, ins.lookup(ins.node_id, port), record_now=ins.record_now)
    row = Row(key, "grad", label, "TENSOR", ins.node_id, port, state)
    if state.has_value:
        row.view = _view(ins, row, magnitude=True)
        row.health = health(gr.GradStats.of([state.value]))
    return row


def layer_rows(ins: Inspection) -> list[dict[str, Any]]:
    """The per-layer summary of the run: one row per layer with weights, in run order."""
    layers = ins.lookup(gr.RUN, gr.LAYERS)
    return [{"name": layer["name"], "health": health(gr.layer_stats(layer, ins.lookup)), "here": layer["node"] == ins.node_id}
            for layer in (layers if isinstance(layers, list) else [])]


def find_row(ins: Inspection, key: str) -> tuple[Row | None, str]:
    """A Forward row, or a Backward one (``grad.`` / ``wgrad.`` keys), by its key."""
    if key.startswith(("grad.", "wgrad.")):
        outputs, weights = gradient_rows(ins)
        return next((r for r in outputs + weights if r.key == key), None), ""
    inputs, outputs, chip = forward_rows(ins)
    return next((r for r in inputs + outputs if r.key == key), None), chip


# -- tabs ---------------------------------------------------------------------------------

class InspectorTab(ABC):
    slug: str
    title: str
    template: str

    @staticmethod
    def shows_for(cls) -> bool:
        """Whether a node of this class has the tab."""
        return True

    @abstractmethod
    def context(self, ins: Inspection) -> dict[str, Any]:
        """What the tab's template lays out."""


class Forward(InspectorTab):
    slug, title, template = "forward", "Forward", "inspector/_forward.html"

    def context(self, ins):
        inputs, outputs, chip = forward_rows(ins)
        return {"inputs": inputs, "outputs": outputs, "chip": chip}


class Steps(InspectorTab):
    """The __steps__ trace one row at a time: every step's name to choose from, and the chosen
    one's description (Markdown and maths), scalars and tensors as the Forward tab's grids."""
    slug, title, template = "steps", "Steps", "inspector/_steps.html"

    def context(self, ins):
        state = _recorded_extra(ins, "__steps__", backward=False)
        trace = state.value if state.has_value else []
        if not trace:
            return {"state": state, "steps": []}
        number = min(max(1, ins.step), len(trace))
        chosen = trace[number - 1]
        tensors = []
        for name, value in chosen.get("tensors", {}).items():
            key = f"step{number}.{name}"
            heavy.ahead_of(value)
            tensors.append({"name": name, "key": key,
                            "view": view(value, ins.slices.get(key), ins.offsets.get(key, (0, 0)))})
        return {"state": state, "steps": [{"number": i, "name": s["name"]} for i, s in enumerate(trace, 1)],
                "step": {"number": number, "name": chosen["name"], "description": chosen.get("description", ""),
                         "scalars": [(k, fmt(v)) for k, v in chosen.get("scalars", {}).items()],
                         "tensors": tensors}}


class Backward(InspectorTab):
    slug, title, template = "backward", "Backward", "inspector/_backward.html"

    def context(self, ins):
        state = _recorded_extra(ins, gr.TARGET, backward=True, holder=gr.RUN)
        target = (state.value or None) if state.has_value else None  # None: Capture gradients was off
        if target is None or not target["shown"]:
            return {"state": state, "target": target}
        outputs, weights = gradient_rows(ins)
        return {"state": state, "target": target, "outputs": outputs, "weights": weights, "layers": layer_rows(ins)}


class Training(InspectorTab):
    """A training node's progress (live while it trains) and, with Record node outputs on, the
    epochs it recorded: pick one to see its losses and every layer's weights then."""
    slug, title, template = "training", "Training", "inspector/_training.html"

    @staticmethod
    def shows_for(cls) -> bool:
        return bool(getattr(cls, "reports_training", False))

    def context(self, ins):
        state = cs.progress_state(ins.run, ins.node_id)
        progress = state.value if state.has_value else {}
        epochs = training.recorded_epochs(_ports(ins), ins.node_id)
        chosen = ins.epoch if ins.epoch in epochs else (epochs[-1] if epochs else None)
        lookup = ins.lookup(ins.node_id, f"__epoch{chosen}") if chosen else cs.MISSING
        snapshot = cs.row_state(ins.run, ins.node_id, lookup, record_now=ins.record_now)
        weights = []
        if snapshot.has_value:
            serial = ins.serials.get((ins.node_id, f"__epoch{chosen}"))
            for name, tensor in snapshot.value["weights"].items():
                key = ("epoch", ins.run_id, serial, name)
                if (made := _kept_view(key)) is None:
                    heavy.ahead_of(tensor)
                    _keep_view(key, made := view(tensor))
                weights.append({"name": name, "view": made})
        return {"state": state, "node": ins.node_id, "summary": training.summary(progress),
                "bar": progress_line(progress), "parameters": training.parameter_rows(progress.get("config", {})),
                "curve": training.loss_curve(progress.get("losses", []), progress.get("val_losses", [])),
                "epochs": training.epoch_rows(progress), "recorded": epochs, "chosen": chosen,
                "snapshot": snapshot, "weights": weights}


def _ports(ins: Inspection) -> list[tuple[str, str]] | None:
    if ins.run_id is None:
        return None
    try:
        return ins.store.ports(ins.run_id)
    except StoreUnreachable:
        return None


def _recorded_extra(ins: Inspection, port: str, backward: bool, holder: str | None = None) -> cs.RowState:
    """Steps and gradients are extra captures: a run the store still holds without them
    simply recorded none (the tab's own empty state), rather than expired. ``holder``: the
    node id the capture is kept under, when it is not the inspected node's (the run's)."""
    lookup = ins.lookup(ins.node_id if holder is None else holder, port)
    if lookup is cs.MISSING and ins.run_id and _holds(ins):
        lookup = []
    return cs.row_state(ins.run, ins.node_id, lookup, record_now=ins.record_now, after_run=backward or ins.after_run)


def _holds(ins: Inspection) -> bool:
    try:
        return ins.store.has_run(ins.run_id)
    except StoreUnreachable:
        return False


TABS: dict[str, InspectorTab] = {t.slug: t for t in (Forward(), Steps(), Backward(), Training())}
