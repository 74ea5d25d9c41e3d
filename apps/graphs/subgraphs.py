"""Blocks (subgraphs): collapse selected nodes into one block node, expand it again, and
flatten every block for the engine, where inner nodes run under ids "block/inner".
Pure functions over documents; no Django here."""
from __future__ import annotations

import copy
from typing import Any

from . import document
from .edits import EditError, _new_id, find_node, node_class, port_type

TYPE = "Subgraph"
MAX_DEPTH = 10


def definition(node: dict[str, Any]) -> dict[str, Any]:
    return node["data"].get("params", {}).get("subgraph") or {"nodes": [], "edges": [], "inputs": [], "outputs": []}


def collapse(doc: dict[str, Any], ids: set[str]) -> tuple[dict[str, Any], str]:
    """Turn the selected nodes into one block whose ports are the edges crossing the selection."""
    ids = {i for i in ids if i}
    if not ids:
        raise EditError("Select the nodes to collapse into a subgraph.")
    for node_id in ids:
        if node_class(find_node(doc, node_id)) is None:
            raise EditError("Notes cannot go into a subgraph.")
    doc = copy.deepcopy(doc)
    inside = [n for n in doc["nodes"] if n["id"] in ids]
    block_id = _new_id(doc, "block")
    inner_edges, outer_edges, inputs, outputs = [], [], {}, {}
    for e in doc["edges"]:
        src_in, dst_in = e["source"] in ids, e["target"] in ids
        if src_in and dst_in:
            inner_edges.append(e)
        elif dst_in and document.is_trigger(e):
            if not any(document.is_trigger(o) and o["source"] == e["source"] and o["target"] == block_id for o in outer_edges):
                outer_edges.append({**e, "target": block_id})
        elif dst_in:
            name = _port_name(inputs, e["target"], e["targetHandle"])
            outer_edges.append({**e, "target": block_id, "targetHandle": name})
        elif src_in:
            name = _port_name(outputs, e["source"], e["sourceHandle"])
            outer_edges.append({**e, "source": block_id, "sourceHandle": name})
        else:
            outer_edges.append(e)
    types = {n["id"]: n for n in inside}
    block = {
        "id": block_id, "type": TYPE,
        "position": {"x": min(n["position"]["x"] for n in inside), "y": min(n["position"]["y"] for n in inside)},
        "data": {"label": "Block", "params": {"subgraph": {
            "nodes": inside, "edges": inner_edges,
            "inputs": [{"name": name, "node": n, "port": p, "type": port_type(types[n], p, "in")} for (n, p), name in inputs.items()],
            "outputs": [{"name": name, "node": n, "port": p, "type": port_type(types[n], p, "out")} for (n, p), name in outputs.items()],
        }}},
    }
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in ids] + [block]
    doc["edges"] = outer_edges
    doc["segmentGroups"] = [g for g in doc.get("segmentGroups", [])  # markers whose ends went inside are swallowed
                            if g["headNodeId"] not in ids and g["tailNodeId"] not in ids]
    return doc, block_id


def _port_name(ports: dict[tuple[str, str], str], node: str, port: str) -> str:
    """One boundary port per inner (node, port); the port's own name while it is unique."""
    if (node, port) not in ports:
        taken = set(ports.values())
        name = port if port not in taken else f"{node}.{port}"
        ports[(node, port)] = name
    return ports[(node, port)]


def expand(doc: dict[str, Any], block_id: str) -> dict[str, Any]:
    """Put a block's nodes back on the canvas, wired as they were."""
    block = find_node(doc, block_id)
    if block["type"] != TYPE:
        raise EditError("Only a subgraph block can be expanded.")
    inner = definition(block)
    doc = copy.deepcopy(doc)
    taken = {n["id"] for n in doc["nodes"] if n["id"] != block_id}
    if taken & {n["id"] for n in inner["nodes"]}:
        raise EditError("A node outside the block now has the same id as one inside; rename it first.")
    edges = [*inner["edges"]]
    ins = {p["name"]: p for p in inner["inputs"]}
    outs = {p["name"]: p for p in inner["outputs"]}
    for e in doc["edges"]:
        if e["target"] == block_id and document.is_trigger(e):
            edges += [{**e, "id": f"{e['id']}-{root}", "target": root} for root in roots(inner)]
        elif e["target"] == block_id and e["targetHandle"] in ins:
            edges.append({**e, "target": ins[e["targetHandle"]]["node"], "targetHandle": ins[e["targetHandle"]]["port"]})
        elif e["source"] == block_id and e["sourceHandle"] in outs:
            edges.append({**e, "source": outs[e["sourceHandle"]]["node"], "sourceHandle": outs[e["sourceHandle"]]["port"]})
        elif block_id not in (e["source"], e["target"]):
            edges.append(e)
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] != block_id] + inner["nodes"]
    doc["edges"] = edges
    return doc


def roots(inner: dict[str, Any]) -> list[str]:
    """Inner nodes no inner data edge feeds: where a trigger into the block starts."""
    fed = {e["target"] for e in inner["edges"] if not document.is_trigger(e)}
    return [n["id"] for n in inner["nodes"] if n["id"] not in fed]


def flatten(doc: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """Every block replaced by its inside, inner ids prefixed "block/" (what the engine runs)."""
    blocks = [n for n in doc["nodes"] if n["type"] == TYPE]
    if not blocks:
        return doc
    if depth >= MAX_DEPTH:
        raise EditError(f"Subgraph nesting exceeds the maximum depth of {MAX_DEPTH}")
    flat = copy.deepcopy(doc)
    for block in blocks:
        flat = _inline(flat, block)
    return flatten(flat, depth + 1)


def _inline(doc: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    """Like expand, but with inner ids prefixed so they cannot clash and captures say where they ran."""
    inner = copy.deepcopy(definition(block))
    prefix = block["id"] + "/"
    rename = {n["id"]: prefix + n["id"] for n in inner["nodes"]}
    for n in inner["nodes"]:
        n["id"] = rename[n["id"]]
    inner["edges"] = [{**e, "id": prefix + e["id"], "source": rename[e["source"]], "target": rename[e["target"]]}
                      for e in inner["edges"] if e["source"] in rename and e["target"] in rename]
    for side in ("inputs", "outputs"):
        inner[side] = [{**p, "node": rename.get(p["node"], p["node"])} for p in inner[side]]
    swapped = {**block, "data": {**block["data"], "params": {"subgraph": inner}}}
    doc = {**doc, "nodes": [swapped if n["id"] == block["id"] else n for n in doc["nodes"]]}
    return expand(doc, block["id"])


def inside_view(block: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The open block as a small document whose ids are the ones its nodes ran under
    ("block/inner"), and which inner ports are fed from outside the block."""
    inner = definition(block)
    prefix = block["id"] + "/"
    nodes = [{**n, "id": prefix + n["id"]} for n in inner["nodes"]]
    edges = [{**e, "id": prefix + e["id"], "source": prefix + e["source"], "target": prefix + e["target"]}
             for e in inner["edges"]]
    fed: dict[str, list[str]] = {}
    for port in inner["inputs"]:
        fed.setdefault(prefix + port["node"], []).append(port["port"])
    return {"nodes": nodes, "edges": edges, "segmentGroups": []}, fed


def rolled_up_status(block_id: str, statuses: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A block's status in a run, from its inner nodes': error at once, running on first
    activity, completed when every inner node is done."""
    inner = [s.get("status") for node, s in statuses.items() if node.startswith(block_id + "/")]
    if not inner:
        return {}
    if "error" in inner:
        return {"status": "error", "error": "a node inside the block failed"}
    if all(s in ("completed", "cached", "skipped") for s in inner):
        return {"status": "completed"}
    if "interrupted" in inner:  # the server restarted while the block ran
        return {"status": "interrupted"}
    return {"status": "running"}
