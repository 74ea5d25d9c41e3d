"""CodefyUI-compatible graph documents: read, check, normalise and write.

A document is kept as the plain JSON dict it came from, so keys we do not know survive a
round trip. ``load`` turns text into a checked, normalised dict or raises DocumentError
listing every problem with where it is. No Django here: the engine and the CLI use it too.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

from codefyui import conf
from codefyui.memo import ByContent

from .nodes.base import resolve
from .nodes.packs import missing_pack

NOTE_TYPE = "note"
BLOCK_TYPE = "Subgraph"

# The per-tab run settings of the seed's Settings table, with their defaults.
RUN_SETTINGS_DEFAULTS: dict[str, Any] = {
    "record_outputs": True,
    "verbose_internals": False,
    "persist_weights": False,
    "capture_gradients": False,
    "auto_synthesize_loss": False,
    "seed": None,
    "deterministic": False,
    "device": "cpu",
}


class DocumentError(ValueError):
    """A graph file we cannot use. ``problems`` lists each one with where it is."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


def load(text: str | bytes) -> dict[str, Any]:
    """Parse and check a graph file; return the normalised document."""
    return normalise(parse(text))


def parse(text: str | bytes) -> Any:
    """Strict JSON: Python's reader also takes NaN and Infinity, which no database or browser does."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise DocumentError([f"Invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"]) from None
    except UnicodeDecodeError:
        raise DocumentError(["The file is not UTF-8 text"]) from None
    except RecursionError:
        raise DocumentError(["The file nests lists or objects too deeply to be a graph"]) from None


def _refuse_constant(name: str):
    raise DocumentError([f"Invalid JSON: {name} is not a JSON number (write a number or null)"])


WHOLE_NUMBER = re.compile(r"\s*(-?[0-9]{1,18})\s*")  # fits in 64 bits; longer text is noise, not a number


def seed_value(value: Any) -> int | None:
    """A Random seed as a file, a form or the API gives it: None when blank, else a whole
    number of at most 18 digits; ValueError for anything else."""
    if value is None or value == "":
        return None
    match = None if isinstance(value, bool) or not isinstance(value, (int, str)) else WHOLE_NUMBER.fullmatch(str(value))
    if match is None:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
        raise ValueError(f"must be a whole number or blank, not {shown}")
    return int(match[1])


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False)


def normalise(raw: Any) -> dict[str, Any]:
    """Check a decoded document and return a normalised copy (unknown keys kept)."""
    if not isinstance(raw, dict):
        raise DocumentError(["The graph must be a JSON object with 'nodes' and 'edges'"])
    if _nesting(raw) > MAX_NESTING:
        raise DocumentError([f"The graph nests lists or objects more than {MAX_NESTING} deep"])
    check_limits(raw)  # before checking each node: a huge graph is refused at once
    if isinstance(raw.get("nodes"), list):
        raw = _with_presets_as_blocks(raw)
    problems: list[str] = []
    doc = dict(raw)
    doc["name"] = _text(raw.get("name", ""), "name", problems)
    doc["description"] = _text(raw.get("description", ""), "description", problems)
    if "topic" in raw:  # a lesson's topic on the welcome screen (examples/*.json)
        doc["topic"] = _text(raw["topic"], "topic", problems)
    doc["nodes"] = _nodes(raw.get("nodes"), problems)
    ids = {n["id"] for n in doc["nodes"] if isinstance(n, dict)}
    doc["edges"] = _edges(raw.get("edges", []), ids, problems)
    doc["segmentGroups"] = _segments(raw.get("segmentGroups", []), ids, problems)
    doc["settings"] = _settings(raw.get("settings", {}), problems)
    if problems:
        raise DocumentError(problems)
    return doc


def normalised(raw: Any) -> dict[str, Any]:
    """``normalise``, remembered for the documents seen last (codefyui/memo.py): a class that
    sends its lesson's example thirty times has it checked once. The copy is shared: read it only."""
    return _normalised(raw, depends=(conf.MAX_GRAPH_NODES, conf.MAX_GRAPH_MB))


_normalised = ByContent(normalise)


def _with_presets_as_blocks(raw: dict[str, Any]) -> dict[str, Any]:
    """CodefyUI's ``preset:`` nodes as blocks (apps/graphs/presets); unknown ones stay, to be reported."""
    from . import presets  # presets build their blocks with edits, which reads documents: imported here

    if not any(isinstance(n, dict) and str(n.get("type", "")).startswith(presets.PREFIX) for n in raw["nodes"]):
        return raw
    try:
        expanded = {**raw, "nodes": presets.Expansion.of(raw).nodes_of(raw["nodes"])}
    except presets.PresetError as exc:
        raise DocumentError([str(exc)]) from None
    check_limits(expanded)
    return expanded


MAX_NESTING = 100  # blocks inside blocks stay far below; deeper would overflow the copies edits make


def _nesting(value: Any) -> int:
    """How deep lists and objects sit inside each other (walked without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if depth <= MAX_NESTING:  # past it the answer is known
                stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def node_count(doc: Any) -> int:
    """Every node of a graph, blocks and the nodes inside them (at any depth) included."""
    count, graphs = 0, [doc]
    while graphs:
        graph = graphs.pop()
        nodes = graph.get("nodes") if isinstance(graph, dict) else None
        if not isinstance(nodes, list):
            continue
        count += len(nodes)
        for node in nodes:
            data = node.get("data") if isinstance(node, dict) and node.get("type") == BLOCK_TYPE else None
            if isinstance(data, dict) and isinstance(data.get("params"), dict):
                graphs.append(data["params"].get("subgraph"))
    return count


def size_bytes(doc: Any) -> int:
    """The document's size as compact JSON."""
    return len(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode())


def check_limits(doc: Any, before: Any = None) -> None:
    """Refuse a graph past CODEFYUI_MAX_GRAPH_NODES nodes or CODEFYUI_MAX_GRAPH_MB. For an
    edit (``before`` given) only growing past them is refused, so a graph stored before a
    limit was lowered can still be edited down."""
    problems = []
    nodes = node_count(doc)
    if nodes > conf.MAX_GRAPH_NODES and (before is None or nodes > node_count(before)):
        problems.append(f"The graph has {nodes} nodes; a graph can have at most {conf.MAX_GRAPH_NODES} "
                        "(CODEFYUI_MAX_GRAPH_NODES).")
    limit = conf.MAX_GRAPH_MB * 2**20
    size = size_bytes(doc)
    if size > limit and (before is None or size > size_bytes(before)):
        problems.append(f"The graph is {math.ceil(size / 2**20 * 10) / 10:.1f} MB; a graph can be at most "
                        f"{conf.MAX_GRAPH_MB} MB (CODEFYUI_MAX_GRAPH_MB).")
    if problems:
        raise DocumentError(problems)


def run_settings(doc: dict[str, Any]) -> dict[str, Any]:
    """The document's run settings with every default filled in."""
    return {**RUN_SETTINGS_DEFAULTS, **{k: v for k, v in doc.get("settings", {}).items()
                                       if k in RUN_SETTINGS_DEFAULTS}}


def node_label(node: dict[str, Any]) -> str:
    """Its own label, else its type without a pack's namespace (``Edu-KNN``, as CodefyUI shows it)."""
    label = node.get("data", {}).get("label")
    return label if isinstance(label, str) and label.strip() else node["type"].split(":", 1)[-1]


def is_trigger(edge: dict[str, Any]) -> bool:
    return edge.get("type") == "trigger"


# -- the parts ----------------------------------------------------------------------------

VIEW_MARGIN = 40.0              # px between the canvas's edge and an imported graph
COLUMN_STEP, ROW_STEP = 260.0, 140.0   # a laid-out graph's columns and rows


def placed_in_view(doc: dict[str, Any]) -> dict[str, Any]:
    """An imported document with every card on the canvas, in place. CodefyUI's canvas pans
    to negative positions and ours starts at 0, 0: such a graph moves right and down as a
    whole. A graph with no positions (project mode: every card at one spot) is laid out in
    columns, each node one column right of the furthest node that feeds it."""
    nodes = doc.get("nodes", [])
    if not nodes:
        return doc
    spots = {(n["position"]["x"], n["position"]["y"]) for n in nodes}
    if len(nodes) > 1 and len(spots) == 1:
        _lay_out_in_columns(nodes, doc.get("edges", []))
    dx = max(0.0, VIEW_MARGIN - min(n["position"]["x"] for n in nodes))
    dy = max(0.0, VIEW_MARGIN - min(n["position"]["y"] for n in nodes))
    if dx or dy:
        for node in nodes:
            node["position"] = {**node["position"], "x": node["position"]["x"] + dx, "y": node["position"]["y"] + dy}
    return doc


def _lay_out_in_columns(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> None:
    ids = [n["id"] for n in nodes]
    feeds: dict[str, list[str]] = {i: [] for i in ids}
    waiting = dict.fromkeys(ids, 0)   # inputs not yet placed
    for edge in edges:
        if edge["source"] in feeds and edge["target"] in feeds and edge["source"] != edge["target"]:
            feeds[edge["source"]].append(edge["target"])
            waiting[edge["target"]] += 1
    column = dict.fromkeys(ids, 0)    # a node on a cycle (Run refuses one) stays in the first column
    ready = [i for i in ids if not waiting[i]]
    while ready:
        source = ready.pop()
        for target in feeds[source]:
            column[target] = max(column[target], column[source] + 1)
            waiting[target] -= 1
            if not waiting[target]:
                ready.append(target)
    rows: dict[int, int] = {}
    for node in nodes:
        row = rows[column[node["id"]]] = rows.get(column[node["id"]], -1) + 1
        node["position"] = {**node["position"], "x": column[node["id"]] * COLUMN_STEP, "y": row * ROW_STEP}


def _text(value: Any, path: str, problems: list[str]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        problems.append(f"{path}: must be text")
        return ""
    return value


def _nodes(value: Any, problems: list[str]) -> list[dict[str, Any]]:
    if value is None:
        problems.append("nodes: missing (a list of nodes is required)")
        return []
    if not isinstance(value, list):
        problems.append("nodes: must be a list")
        return []
    nodes, seen = [], set()
    for i, raw in enumerate(value):
        path = f"nodes[{i}]"
        if not isinstance(raw, dict):
            problems.append(f"{path}: must be an object")
            continue
        node = dict(raw)
        node_id, type_key = raw.get("id"), raw.get("type")
        if not isinstance(node_id, str) or not node_id:
            problems.append(f"{path}.id: missing")
            continue
        if node_id in seen:
            problems.append(f"{path}.id: '{node_id}' is used by another node")
        seen.add(node_id)
        if not isinstance(type_key, str) or not type_key:
            problems.append(f"{path}.type: missing (node {node_id})")
            continue
        if type_key != NOTE_TYPE:
            if type_key.startswith("preset:"):
                problems.append(f"Unknown preset: {type_key[7:]} ({node_id})")
            elif resolve(type_key) is None and missing_pack(type_key) is None:
                # a node of a pack this server lacks loads as a placeholder; only Run refuses it
                problems.append(f"Unknown node type: {type_key} ({node_id})")
        node["position"] = _position(raw.get("position"), f"{path}.position", problems)
        data = raw.get("data", {})
        if not isinstance(data, dict):
            problems.append(f"{path}.data: must be an object")
            data = {}
        data = dict(data)
        if type_key != NOTE_TYPE:
            params = data.get("params", {})
            if params is None:
                params = {}
            if not isinstance(params, dict):
                problems.append(f"{path}.data.params: must be an object")
                params = {}
            data["params"] = params
        node["data"] = data
        if type_key == BLOCK_TYPE:
            _check_block(data["params"].get("subgraph"), f"{path}.data.params.subgraph", problems)
        nodes.append(node)
    return nodes


def _check_block(inner: Any, path: str, problems: list[str]) -> None:
    """A block's inside is a small graph of its own, with ports naming its inner nodes."""
    if inner is None:
        return
    if not isinstance(inner, dict):
        problems.append(f"{path}: must be an object with nodes, edges, inputs and outputs")
        return
    found: list[str] = []
    nodes = _nodes(inner.get("nodes", []), found)
    ids = {n["id"] for n in nodes}
    _edges(inner.get("edges", []), ids, found)
    for side in ("inputs", "outputs"):
        ports = inner.get(side, [])
        if not isinstance(ports, list) or not all(isinstance(p, dict) and isinstance(p.get("name"), str)
                                                  and p.get("node") in ids and isinstance(p.get("port"), str)
                                                  for p in ports):
            found.append(f"{side}: each needs a name, an inner node and its port")
    problems.extend(f"{path}.{p}" for p in found)


def _position(value: Any, path: str, problems: list[str]) -> dict[str, float]:
    if value is None:  # project-mode graphs carry no positions
        return {"x": 0.0, "y": 0.0}
    if not isinstance(value, dict):
        problems.append(f"{path}: must be an object with x and y")
        return {"x": 0.0, "y": 0.0}
    position = dict(value)
    for axis in ("x", "y"):
        v = value.get(axis, 0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not _finite(v):
            problems.append(f"{path}.{axis}: must be a finite number")
            v = 0
        position[axis] = float(v)
    return position


def _finite(number: int | float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an integer beyond any float
        return False


def _edges(value: Any, ids: set[str], problems: list[str]) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        problems.append("edges: must be a list")
        return []
    edges, seen = [], set()
    for i, raw in enumerate(value):
        path = f"edges[{i}]"
        if not isinstance(raw, dict):
            problems.append(f"{path}: must be an object")
            continue
        edge = dict(raw)
        edge_id = raw.get("id") or f"e{i}"
        edge["id"] = str(edge_id)
        if edge["id"] in seen:
            problems.append(f"{path}.id: '{edge_id}' is used by another edge")
        seen.add(edge["id"])
        for end in ("source", "target"):
            if not isinstance(raw.get(end), str) or not raw.get(end):
                problems.append(f"{path}.{end}: missing")
            elif raw[end] not in ids:
                problems.append(f"{path}: Edge references missing node '{raw[end]}'")
        kind = raw.get("type") or "data"
        data = raw.get("data") if isinstance(raw.get("data"), dict) else {}
        if kind == "triggerEdge" or data.get("type") == "trigger" or raw.get("targetHandle") == "__trigger":
            kind = "trigger"
        if kind not in ("data", "trigger"):
            problems.append(f"{path}.type: must be 'data' or 'trigger', not {kind!r}")
        edge["type"] = kind
        if kind == "trigger":
            edge["sourceHandle"] = raw.get("sourceHandle") or "trigger"
            edge["targetHandle"] = ""
        else:
            for handle in ("sourceHandle", "targetHandle"):
                if not isinstance(raw.get(handle), str) or not raw.get(handle):
                    problems.append(f"{path}.{handle}: missing (which port the edge uses)")
        edges.append(edge)
    return edges


def _segments(value: Any, ids: set[str], problems: list[str]) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append("segmentGroups: must be a list")
        return []
    groups = []
    for i, raw in enumerate(value):
        if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in ("id", "headNodeId", "tailNodeId")):
            problems.append(f"segmentGroups[{i}]: needs id, headNodeId and tailNodeId")
            continue
        groups.append(dict(raw))  # a marker whose node is gone is kept; it just draws no bubble
    return groups


def _settings(value: Any, problems: list[str]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append("settings: must be an object")
        return {}
    settings = dict(value)
    try:
        seed = seed_value(settings.pop("seed", None))
    except ValueError as exc:
        problems.append(f"settings.seed: {exc}")
    else:
        if seed is not None:
            settings["seed"] = seed
    for flag in (k for k, v in RUN_SETTINGS_DEFAULTS.items() if isinstance(v, bool)):
        if flag in settings and not isinstance(settings[flag], bool):
            problems.append(f"settings.{flag}: must be true or false")
    if "device" in settings and not isinstance(settings["device"], str):
        problems.append("settings.device: must be text such as 'cpu' or 'cuda'")
    return settings
