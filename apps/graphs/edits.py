"""Pure edits of a graph document: each takes a document and returns a changed copy, or
raises EditError with a message for the student. The editor's views apply one edit per
request and record it as one undo step. No Django here.
"""
from __future__ import annotations

import copy
import math
import random
import re
from collections.abc import Mapping
from typing import Any

from . import document, presets, segments
from .nodes.base import Param, ParamError, parse_int_list, resolve, types_compatible
from .reach import data_links, reachable

GRID = 24                # the canvas grid, in px
GRID_EDIT_MAX_CELLS = 512
EXPLICIT_MODE = ("value_mode", "explicit")   # the param a values grid needs, and its value


class EditError(ValueError):
    pass


def _copy(doc: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(doc)


def find_node(doc: dict[str, Any], node_id: str) -> dict[str, Any]:
    node = next((n for n in doc["nodes"] if n["id"] == node_id), None)
    if node is None:
        raise EditError(f"There is no node '{node_id}' in this graph (it may have been deleted).")
    return node


def node_class(node: dict[str, Any]):
    return resolve(node["type"]) if node["type"] != document.NOTE_TYPE else None


def snap(value: float) -> float:
    return float(round(value / GRID) * GRID)


CANVAS_LIMIT = 100_000.0  # px from the origin: far past any lesson's graph


def coordinate(value: float) -> float:
    """Where a form may put a node: a finite number within the canvas (it can post nan, inf or 1e309)."""
    return min(max(0.0, value), CANVAS_LIMIT) if math.isfinite(value) else 0.0


# -- nodes ----------------------------------------------------------------------------------

def add_node(doc: dict[str, Any], type_key: str, x: float, y: float, snap_to_grid: bool = False) -> tuple[dict, str]:
    """A new node of this type; a preset (``preset:<name>``) arrives as its block."""
    preset = presets.offered(type_key)
    cls = None if preset else resolve(type_key)
    if preset is None and cls is None:
        raise EditError(f"Unknown node type: {type_key}")
    doc = _copy(doc)
    x, y = coordinate(x), coordinate(y)
    if snap_to_grid:
        x, y = snap(x), snap(y)
    position = {"x": float(x), "y": float(y)}
    if preset:
        node = presets.instantiate(preset, _new_id(doc, preset.name), position)
    else:
        node = {"id": _new_id(doc, cls.type), "type": cls.type, "position": position,
                "data": {"params": {p.name: copy.deepcopy(p.default) for p in cls.params}}}
    doc["nodes"].append(node)
    return doc, node["id"]


# A node added without a drop point (the sidebar's buttons) takes a free slot: slots are a
# card wide and tall plus a gap (room for the shape written on an edge), three to a row, so they fit the canvas beside the side column.
SLOT_W, SLOT_H = 10 * GRID, 6 * GRID
SLOT_COLUMNS = 3
CARD_BOX = (184, 120)    # room a card takes, its tallest common height


def free_place(doc: dict[str, Any], near: str = "") -> tuple[float, float]:
    """Where a new node goes: right of the node ``near`` (then below it) if that is free, else
    the first free slot in reading order. Never on top of another card."""
    boxes = [(n["position"]["x"], n["position"]["y"]) for n in doc["nodes"]]

    def free(x: float, y: float) -> bool:
        return all(abs(x - bx) >= CARD_BOX[0] + GRID or abs(y - by) >= CARD_BOX[1] for bx, by in boxes)

    anchor = next((n["position"] for n in doc["nodes"] if n["id"] == near), None)
    if anchor is not None:
        for x, y in ((anchor["x"] + SLOT_W, anchor["y"]), (anchor["x"], anchor["y"] + SLOT_H)):
            if x < GRID + SLOT_COLUMNS * SLOT_W and free(x, y):
                return float(x), float(y)
    for slot in range(len(boxes) * 2 + 1):  # enough slots for every card and a free one
        x, y = GRID + (slot % SLOT_COLUMNS) * SLOT_W, 2 * GRID + (slot // SLOT_COLUMNS) * SLOT_H
        if free(x, y):
            return float(x), float(y)
    return float(GRID), float(2 * GRID + (len(boxes) // SLOT_COLUMNS + 1) * SLOT_H)


def _new_id(doc: dict[str, Any], type_key: str) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", type_key.split(":")[-1].lower()).strip("-") or "node"
    taken = {n["id"] for n in doc["nodes"]}
    n = 1
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def move_node(doc: dict[str, Any], node_id: str, x: float, y: float, snap_to_grid: bool = False) -> dict:
    doc = _copy(doc)
    node = find_node(doc, node_id)
    x, y = coordinate(x), coordinate(y)
    if snap_to_grid:
        x, y = snap(x), snap(y)
    node["position"] = {**node.get("position", {}), "x": x, "y": y}
    return doc


NUDGE = 2 * GRID


def nudges(node: dict[str, Any]) -> list[tuple[str, str, float, float]]:
    """(direction, arrow, x, y) of the moves by two grid steps the node panel offers, so a node
    can be moved without dragging it."""
    x, y = node["position"]["x"], node["position"]["y"]
    moves = (("left", "←", x - NUDGE, y), ("up", "↑", x, y - NUDGE), ("down", "↓", x, y + NUDGE), ("right", "→", x + NUDGE, y))
    return [(name, arrow, coordinate(mx), coordinate(my)) for name, arrow, mx, my in moves]


def snap_all(doc: dict[str, Any]) -> dict:
    doc = _copy(doc)
    for node in doc["nodes"]:
        node["position"]["x"], node["position"]["y"] = snap(node["position"]["x"]), snap(node["position"]["y"])
    return doc


def rename_node(doc: dict[str, Any], node_id: str, label: str) -> dict:
    label = label.strip()
    if not label:  # a blank name is ignored, as in CodefyUI
        return doc
    if len(label) > 80:
        raise EditError("A node name can be at most 80 characters.")
    doc = _copy(doc)
    find_node(doc, node_id).setdefault("data", {})["label"] = label
    return doc


def delete_nodes(doc: dict[str, Any], node_ids: set[str]) -> dict:
    """Delete nodes, their edges, and the segment markers that used them."""
    doc = _copy(doc)
    for node_id in node_ids:
        find_node(doc, node_id)
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in node_ids]
    doc["edges"] = [e for e in doc["edges"] if e["source"] not in node_ids and e["target"] not in node_ids]
    doc["segmentGroups"] = [g for g in doc.get("segmentGroups", [])
                            if g["headNodeId"] not in node_ids and g["tailNodeId"] not in node_ids]
    return doc


# -- edges ----------------------------------------------------------------------------------

def connect(doc: dict[str, Any], source: str, source_port: str, target: str, target_port: str) -> dict:
    """Wire an output to an input (or a Start trigger to an entry node), type-checked.
    An input holds one edge: a new one replaces the old."""
    doc = _copy(doc)
    src, dst = find_node(doc, source), find_node(doc, target)
    src_cls, dst_cls = node_class(src), node_class(dst)
    if src_cls is None or dst_cls is None:
        raise EditError("Notes cannot be connected.")
    if source == target:
        raise EditError("A node cannot be connected to itself.")
    out = next((p for p in src_cls.output_ports(params_of(src)) if p.name == source_port), None)
    if out is None:
        raise EditError(f"{document.node_label(src)} has no output '{source_port}'.")
    if out.type == "TRIGGER":
        if any(document.is_trigger(e) and e["source"] == source and e["target"] == target for e in doc["edges"]):
            return doc
        doc["edges"].append({"id": _edge_id(doc), "type": "trigger", "source": source, "sourceHandle": source_port,
                             "target": target, "targetHandle": ""})
        return doc
    port = dst_cls.input_port(target_port, params_of(dst))
    if port is None:
        raise EditError(f"{document.node_label(dst)} has no input '{target_port}'.")
    if not types_compatible(out.type, port.type):
        raise EditError(f"Type mismatch: {document.node_label(src)}.{out.name} ({out.type}) cannot feed "
                        f"{document.node_label(dst)}.{port.name} ({port.type}).")
    if source in reachable([target], data_links(doc["edges"])):
        raise EditError("That connection would make a loop: the data would flow back into itself.")
    doc["edges"] = [e for e in doc["edges"]
                    if document.is_trigger(e) or not (e["target"] == target and e["targetHandle"] == target_port)]
    doc["edges"].append({"id": _edge_id(doc), "source": source, "sourceHandle": source_port,
                         "target": target, "targetHandle": target_port})
    return doc


def _edge_id(doc: dict[str, Any]) -> str:
    taken = {e["id"] for e in doc["edges"]}
    n = len(taken) + 1
    while f"e{n}" in taken:
        n += 1
    return f"e{n}"


def disconnect(doc: dict[str, Any], edge_id: str) -> dict:
    doc = _copy(doc)
    before = len(doc["edges"])
    doc["edges"] = [e for e in doc["edges"] if e["id"] != edge_id]
    if len(doc["edges"]) == before:
        raise EditError("That connection no longer exists.")
    return doc


def compatible_sources(doc: dict[str, Any], target: str, target_port: str) -> list[tuple[str, str, str]]:
    """(node id, port, label) of every output that may feed this input without a loop."""
    dst = find_node(doc, target)
    dst_cls = node_class(dst)
    port = dst_cls.input_port(target_port, params_of(dst)) if dst_cls else None
    if port is None:
        return []
    options, downstream = [], reachable([target], data_links(doc["edges"]))  # feeding these would make a loop
    for node in doc["nodes"]:
        cls = node_class(node)
        if cls is None or node["id"] in downstream:
            continue
        for out in cls.output_ports(params_of(node)):
            if out.type != "TRIGGER" and types_compatible(out.type, port.type):
                options.append((node["id"], out.name, f"{document.node_label(node)}.{out.name}"))
    return options


# -- params ---------------------------------------------------------------------------------

def params_of(node: dict[str, Any]) -> dict[str, Any]:
    """A node's params, coerced to their declared types (defaults for what is missing)."""
    cls = node_class(node)
    return cls.coerce_params(node.get("data", {}).get("params", {}))[0] if cls else {}


def port_type(node: dict[str, Any], port: str, side: str) -> str:
    """The declared type of a node's input ("in") or output ("out") port; ANY if unknown."""
    cls = node_class(node)
    if cls is None:
        return "ANY"
    params = params_of(node)
    ports = cls.input_ports(params) if side == "in" else cls.output_ports(params)
    return next((p.type for p in ports if p.name == port), "ANY")


def set_params(doc: dict[str, Any], node_id: str, raw: dict[str, Any]) -> dict:
    """Set params from form text (a block's: the inner params it shows); every bad value is
    named and nothing is saved."""
    doc = _copy(doc)
    node = find_node(doc, node_id)
    cls = node_class(node)
    if cls is None:
        raise EditError("Notes have no parameters.")
    ports_before = _port_names(node, cls)
    if cls.subgraph:
        fields = [(f"{inner['id']}.{p.name}", p, inner.setdefault("data", {}).setdefault("params", {}))
                  for inner, p, _ in block_params(node)]
    else:  # a script's code comes from the Code pane's form; grids and layers have edits of their own
        params = node["data"].setdefault("params", {})
        fields = [(p.name, p, params) for p in cls.params if p.kind not in ("grid", "json", "layers")]
    problems = []
    for field, param, params in fields:
        if field not in raw:
            continue
        try:
            params[param.name] = param.coerce(raw[field])
        except ParamError as exc:
            problems.append(str(exc))
    if problems:
        raise EditError("; ".join(problems))
    _resize_grid(node, cls)
    _drop_edges_of_gone_ports(doc, node_id, ports_before, _port_names(node, cls))
    return doc


def block_params(block: dict[str, Any]) -> list[tuple[dict[str, Any], Param, str]]:
    """The inner params a block shows as its own (a preset's exposed params): (inner node,
    its param, the label), leaving out entries whose node or param is not there."""
    inside = block["data"].get("params", {}).get("subgraph") or {}
    inner = {n.get("id"): n for n in inside.get("nodes", []) if isinstance(n, dict)}
    shown = []
    for entry in inside.get("params") if isinstance(inside.get("params"), list) else []:
        node = inner.get(entry.get("node")) if isinstance(entry, dict) else None
        cls = node_class(node) if node else None
        param = next((p for p in cls.params if p.name == entry.get("param")), None) if cls else None
        if param is not None and param.in_form:
            shown.append((node, param, str(entry.get("label") or param.name)))
    return shown


def _port_names(node: dict[str, Any], cls) -> tuple[set[str], set[str]]:
    params = params_of(node)
    return {p.name for p in cls.input_ports(params)}, {p.name for p in cls.output_ports(params)}


def _drop_edges_of_gone_ports(doc: dict[str, Any], node_id: str, before, after) -> None:
    """Ports that depend on params (a script's port counts, Split's pieces) go with their edges."""
    gone_in, gone_out = before[0] - after[0], before[1] - after[1]
    doc["edges"] = [e for e in doc["edges"] if document.is_trigger(e) or not (
        (e["target"] == node_id and e.get("targetHandle") in gone_in)
        or (e["source"] == node_id and e.get("sourceHandle") in gone_out))]


def grid_param(cls) -> Param | None:
    return next((p for p in cls.params if p.kind == "grid"), None) if cls else None


def grid_shape(node: dict[str, Any]) -> list[int] | None:
    try:
        shape = parse_int_list(node["data"]["params"].get("shape", "1,4,4"), "shape")
    except ParamError:
        return None
    return shape if all(s > 0 for s in shape) else None


def flat_values(values: Any) -> list[float]:
    if isinstance(values, list):
        return [v for item in values for v in flat_values(item)]
    try:
        return [float(values)]
    except (TypeError, ValueError):
        return [0.0]


def nest(flat: list[float], shape: list[int]) -> Any:
    if len(shape) == 1:
        return flat[: shape[0]]
    step = len(flat) // shape[0]
    return [nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _count(shape: list[int]) -> int:
    total = 1
    for s in shape:
        total *= s
    return total


def _resize_grid(node: dict[str, Any], cls) -> None:
    """Keep the values grid the size of the shape: values kept in order, padded or cut."""
    param = grid_param(cls)
    shape = grid_shape(node)
    if param is None or shape is None or _count(shape) > GRID_EDIT_MAX_CELLS:
        return
    params = node["data"]["params"]
    flat = flat_values(params.get(param.name, []))
    count = _count(shape)
    params[param.name] = nest((flat + [0.0] * count)[:count], shape)


def set_grid(doc: dict[str, Any], node_id: str, cells: list[str] | None = None, fill: str | None = None,
             rng: random.Random | None = None) -> dict:
    """Edit a TensorInput's values grid: typed cells, or Fill 0 / Fill 1 / Random in [-1, 1]."""
    doc = _copy(doc)
    node = find_node(doc, node_id)
    param = grid_param(node_class(node))
    shape = grid_shape(node)
    if param is None or shape is None:
        raise EditError("This node has no values grid, or its shape is not valid.")
    count = _count(shape)
    if count > GRID_EDIT_MAX_CELLS:
        raise EditError(f"The shape holds {count} values; the grid can edit at most {GRID_EDIT_MAX_CELLS}.")
    if fill == "random":
        rng = rng or random.Random()
        flat = [round(rng.uniform(-1, 1), 4) for _ in range(count)]
    elif fill in ("0", "1"):
        flat = [float(fill)] * count
    else:
        cells = list(cells or [])
        if len(cells) != count:
            raise EditError(f"Expected {count} values, got {len(cells)}.")
        flat, bad = [], []
        for i, text in enumerate(cells):
            try:
                value = float(text.strip() or 0)
                if value != value or value in (float("inf"), float("-inf")):
                    raise ValueError
                flat.append(value)
            except ValueError:
                bad.append(f"cell {i + 1} ({text!r})")
        if bad:
            raise EditError("Not a number: " + ", ".join(bad))
    node["data"]["params"][param.name] = nest(flat, shape)
    if any(p.name == EXPLICIT_MODE[0] for p in node_class(node).params):  # typed values are used as typed
        node["data"]["params"][EXPLICIT_MODE[0]] = EXPLICIT_MODE[1]
    return doc


# -- layout ---------------------------------------------------------------------------------

LAYOUT_COLUMN_W, LAYOUT_ROW_H = 10 * GRID, 7 * GRID


def auto_layout(doc: dict[str, Any], width: float = 720, heights: Mapping[str, float] | None = None) -> dict:
    """Columns by depth along the edges (trigger edges too), rows in document order; columns
    that do not fit ``width`` (the canvas's, in px) wrap below, as lines of text do.
    ``heights``: each card's height as the canvas draws it (apps/editor/canvas.layout: ports and
    the picture a run put on it); a card not named takes CARD_BOX's. A row is at least
    LAYOUT_ROW_H tall and a taller card pushes the ones under it down, so none overlap."""
    doc = _copy(doc)
    depth = {n["id"]: 0 for n in doc["nodes"]}
    for _ in range(len(depth)):
        changed = False
        for e in doc["edges"]:
            if e["source"] in depth and e["target"] in depth and depth[e["target"]] < depth[e["source"]] + 1 <= len(depth):
                depth[e["target"]] = depth[e["source"]] + 1
                changed = True
        if not changed:
            break
    per_line = max(1, int((coordinate(width) - GRID - CARD_BOX[0]) // LAYOUT_COLUMN_W) + 1)

    def room(node: dict[str, Any]) -> float:   # a card's height and a grid cell under it, on the grid
        h = (heights or {}).get(node["id"], CARD_BOX[1])
        h = h if isinstance(h, (int, float)) and math.isfinite(h) else CARD_BOX[1]
        return max(LAYOUT_ROW_H, math.ceil((min(max(h, 0), CANVAS_LIMIT) + GRID) / GRID) * GRID)

    filled: dict[int, float] = {}   # each column's stacked height
    for node in doc["nodes"]:
        filled[depth[node["id"]]] = filled.get(depth[node["id"]], 0) + room(node)
    line_top, top = {}, 0.0   # where each wrapped line of columns starts
    for line in range(max(depth.values(), default=0) // per_line + 1):
        line_top[line] = top
        top += max(filled.get(c, 0) for c in range(line * per_line, (line + 1) * per_line))
    placed: dict[int, float] = {}
    for node in doc["nodes"]:
        column = depth[node["id"]]
        line = column // per_line
        below = placed.get(column, 0)
        placed[column] = below + room(node)
        node["position"] = {"x": float(GRID + (column % per_line) * LAYOUT_COLUMN_W),
                            "y": float(min(GRID * 2 + line_top[line] + below, CANVAS_LIMIT))}
    return doc


# -- segment markers --------------------------------------------------------------------------

def create_segment(doc: dict[str, Any], a: str, b: str) -> tuple[dict, str]:
    """Wrap a head-to-tail path in a segment; refused when no data path runs from head to tail."""
    if a == b:
        raise EditError("Create segment needs exactly two selected nodes.")
    find_node(doc, a), find_node(doc, b)
    head, tail = segments.head_and_tail(doc, a, b)
    if not segments.path_set(doc, head, tail):
        raise EditError(segments.NO_PATH)
    doc = _copy(doc)
    segment_id = f"seg-{head}-{tail}"
    doc["segmentGroups"] = [g for g in doc.get("segmentGroups", []) if g["id"] != segment_id]
    doc["segmentGroups"].append({"id": segment_id, "headNodeId": head, "tailNodeId": tail})
    return doc, segment_id


def remove_segment(doc: dict[str, Any], segment_id: str) -> dict:
    if segments.find(doc, segment_id) is None:
        raise EditError("That segment no longer exists.")
    doc = _copy(doc)
    doc["segmentGroups"] = [g for g in doc["segmentGroups"] if g["id"] != segment_id]
    return doc
