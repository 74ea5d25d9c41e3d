"""Presets: small graphs packaged as one node, in CodefyUI's format.

A CodefyUI file places a preset as ``{"type": "preset:<name>", "data": {"internalParams":
{inner id: {param: value}}}}``, defined by the product (the JSON files beside this module) or
by the file's own ``presets[]`` (used only for a name the product lacks). On import each such
node becomes a block (``subgraphs.py``) with the same id: its inside is the preset's nodes and
edges, its ports the preset's exposed ones, so the editor, the engine ("block/inner" ids) and
the Inspector treat it as any other block. No Django here.
"""
from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codefyui import conf

from .. import edits
from ..nodes.base import resolve
from ..nodes.library.subgraph import Subgraph

PREFIX = "preset:"
MAX_DEPTH = 10


@dataclass(frozen=True)
class Preset:
    name: str
    category: str
    description: str
    tags: tuple[str, ...]
    nodes: tuple[dict[str, Any], ...]          # {id, type, params}
    edges: tuple[dict[str, Any], ...]          # {source, sourceHandle, target, targetHandle}
    inputs: tuple[dict[str, Any], ...]         # exposed: {name, internal_node, internal_port, data_type?}
    outputs: tuple[dict[str, Any], ...]
    params: tuple[dict[str, str], ...]        # exposed: {node, param, label}, editable on the block
    size: int = field(default=0, compare=False)  # bytes of its definition as JSON

    @classmethod
    def parse(cls, raw: Any) -> Preset | None:
        """A definition as CodefyUI writes it, or None when it is not one (skipped, as CodefyUI does)."""
        try:
            nodes = tuple({"id": str(n["id"]), "type": str(n["type"]), "params": dict(n.get("params") or {})}
                          for n in raw["nodes"])
            edges = tuple({k: str(e[k]) for k in ("source", "sourceHandle", "target", "targetHandle")}
                          for e in raw.get("edges") or [])
            inputs, outputs = (tuple(dict(p) for p in raw.get(side) or [] if isinstance(p, dict))
                               for side in ("exposed_inputs", "exposed_outputs"))
            params = tuple({"node": str(p["internal_node"]), "param": str(p["param_name"]),
                            "label": str(p.get("display_name") or p["param_name"])}
                           for p in raw.get("exposed_params") or [])
            return cls(str(raw["preset_name"]), str(raw.get("category") or "Preset"), str(raw.get("description") or ""),
                       tuple(str(t) for t in raw.get("tags") or []), nodes, edges, inputs, outputs, params,
                       len(json.dumps(raw, default=str)))
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    is_preset = True  # tells a palette entry from a node class in templates

    @property
    def type(self) -> str:
        """Its type key, as CodefyUI's files and the palette name it."""
        return PREFIX + self.name

    @property
    def runnable(self) -> bool:
        """Every inner node is a type this server has (nested presets count as known)."""
        return all(n["type"].startswith(PREFIX) or resolve(n["type"]) for n in self.nodes)

    @property
    def level(self) -> str:
        """Its difficulty tag (beginner, intermediate, advanced), shown beside it in the palette."""
        return next((t for t in self.tags if t in ("beginner", "intermediate", "advanced")), "")


@functools.cache
def builtin() -> dict[str, Preset]:
    """The product's presets, by name."""
    found = (Preset.parse(json.loads(p.read_text(encoding="utf-8"))) for p in sorted(Path(__file__).parent.glob("*.json")))
    return {p.name: p for p in found if p is not None}


def available() -> list[Preset]:
    """The product's presets whose every node this server has: what the palette offers."""
    return [p for p in builtin().values() if p.runnable]


def offered(type_key: str) -> Preset | None:
    """The palette's preset of this type key (``preset:<name>``), if there is one."""
    preset = builtin().get(type_key[len(PREFIX):]) if type_key.startswith(PREFIX) else None
    return preset if preset and preset.runnable else None


def instantiate(preset: Preset, node_id: str, position: dict[str, float]) -> dict[str, Any]:
    """A new block holding the preset, as the palette adds it."""
    return Expansion(builtin()).block({"id": node_id, "type": preset.type, "position": position}, 0)


def embedded(doc: dict[str, Any]) -> dict[str, Preset]:
    """A document's own ``presets[]``, by name; malformed entries are left out."""
    entries = doc.get("presets")
    found = (Preset.parse(e) for e in entries) if isinstance(entries, list) else ()
    return {p.name: p for p in found if p is not None}


class PresetError(ValueError):
    pass


class Expansion:
    """Turns the ``preset:`` nodes of one document into blocks, within a node and byte budget
    (nested presets could otherwise multiply a small file into millions of nodes)."""

    def __init__(self, known: dict[str, Preset]):
        self.known = known
        self.max_nodes, self.max_bytes = conf.MAX_GRAPH_NODES, conf.MAX_GRAPH_MB * 2**20
        self.nodes = self.bytes = 0

    @classmethod
    def of(cls, doc: dict[str, Any]) -> Expansion:
        return cls({**embedded(doc), **builtin()})  # the product's presets win over a file's own

    def nodes_of(self, nodes: list[Any], depth: int = 0) -> list[Any]:
        """The nodes with every known preset (at any depth inside) made a block."""
        return [self.block(n, depth) if isinstance(n, dict) and str(n.get("type", "")).startswith(PREFIX) else n
                for n in nodes]

    def block(self, node: dict[str, Any], depth: int) -> dict[str, Any]:
        preset = self.known.get(node["type"][len(PREFIX):])
        if preset is None:
            return node  # the document's checks report it: "Unknown preset: name (id)"
        if depth >= MAX_DEPTH:
            raise PresetError(f"Preset nesting exceeds the maximum depth of {MAX_DEPTH}")
        self.nodes += len(preset.nodes)
        self.bytes += preset.size
        if self.nodes > self.max_nodes or self.bytes > self.max_bytes:
            raise PresetError("The graph's presets hold more nodes than a graph may have "
                              f"(CODEFYUI_MAX_GRAPH_NODES = {self.max_nodes}, CODEFYUI_MAX_GRAPH_MB)")
        data = node.get("data") if isinstance(node.get("data"), dict) else {}
        overrides = _dict(data.get("internalParams"))
        inner = [{"id": n["id"], "type": n["type"], "position": {"x": 0.0, "y": 0.0},
                  "data": {"params": {**copy.deepcopy(n["params"]), **_dict(overrides.get(n["id"]))}}}
                 for n in preset.nodes]
        edges = [{"id": f"e{i}", "type": "data", **e} for i, e in enumerate(preset.edges)]
        inner = _laid_out(self.nodes_of(inner, depth + 1), edges)
        label = data.get("label") if isinstance(data.get("label"), str) and data["label"].strip() else preset.name
        kept = {k: v for k, v in data.items() if k not in ("internalParams", "params")}
        return {**{k: v for k, v in node.items() if k != "data"}, "type": Subgraph.type,
                "data": {**kept, "label": label, "params": {"subgraph": {
                    "nodes": inner, "edges": edges,
                    "inputs": _boundary(preset.inputs, inner, "in"), "outputs": _boundary(preset.outputs, inner, "out"),
                    "params": [dict(p) for p in preset.params]}}}}


def _boundary(exposed: tuple[dict[str, Any], ...], inner: list[dict[str, Any]], side: str) -> list[dict[str, Any]]:
    """The block's ports: each exposed port's name, inner node and port, and its type (given,
    else the inner node's declared one)."""
    by_id = {n["id"]: n for n in inner}
    ports = []
    for p in exposed:
        node, port = str(p.get("internal_node", "")), str(p.get("internal_port", ""))
        kind = p.get("data_type") or (edits.port_type(by_id[node], port, side) if node in by_id else "ANY")
        ports.append({"name": str(p.get("name", "")), "node": node, "port": port, "type": str(kind)})
    return ports


def _laid_out(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The inner nodes placed as Auto layout places them, so Enter subgraph shows them tidy."""
    return edits.auto_layout({"nodes": nodes, "edges": edges})["nodes"]


def _dict(value: Any) -> dict[str, Any]:
    return copy.deepcopy(value) if isinstance(value, dict) else {}
