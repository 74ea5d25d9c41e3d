"""What an edit changed, as paths into the document, and whether two edits touched the same
thing. The editor keeps the paths of its last edits, so that an edit made from an older
revision (a second window) is applied only when it touches nothing changed since.

A path names one field: ``["node", id, "position"]``, ``["node", id, "params", name]``,
``["node", id, "label"]``, ``["node", id]`` (added or deleted), ``["edge", id]``,
``["input", node, port]`` (what feeds that input), ``["segment", id]``,
``["settings", key]``, or a top-level key such as ``["name"]``. Two paths clash when one is a
prefix of the other: deleting a node clashes with every change of it. ``[]`` clashes with
everything. No Django here.
"""
from __future__ import annotations

from typing import Any, Iterable

Path = list[str]
MAX_PATHS = 200  # past this (Auto layout of a big graph) one edit is recorded as "everything"


def changed_paths(old: dict[str, Any], new: dict[str, Any]) -> list[Path]:
    """Every field that differs between two documents."""
    paths: list[Path] = []
    old_nodes, new_nodes = _by_id(old.get("nodes", [])), _by_id(new.get("nodes", []))
    for node_id in old_nodes.keys() | new_nodes.keys():
        paths += _node_paths(node_id, old_nodes.get(node_id), new_nodes.get(node_id))
    old_edges, new_edges = _by_id(old.get("edges", [])), _by_id(new.get("edges", []))
    for edge_id in old_edges.keys() | new_edges.keys():
        before, after = old_edges.get(edge_id), new_edges.get(edge_id)
        if before != after:
            paths.append(["edge", edge_id])
            paths += [["input", e["target"], e.get("targetHandle", "")] for e in (before, after) if e]
    old_groups, new_groups = _by_id(old.get("segmentGroups", [])), _by_id(new.get("segmentGroups", []))
    paths += [["segment", g] for g in old_groups.keys() | new_groups.keys() if old_groups.get(g) != new_groups.get(g)]
    old_settings, new_settings = old.get("settings", {}), new.get("settings", {})
    paths += [["settings", k] for k in old_settings.keys() | new_settings.keys() if old_settings.get(k) != new_settings.get(k)]
    for key in (old.keys() | new.keys()) - {"nodes", "edges", "segmentGroups", "settings"}:
        if old.get(key) != new.get(key):
            paths.append([key])
    return paths if len(paths) <= MAX_PATHS else [[]]


def _by_id(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["id"]: item for item in items}


def _node_paths(node_id: str, before: dict | None, after: dict | None) -> list[Path]:
    if before == after:
        return []
    if before is None or after is None or before.get("type") != after.get("type"):
        return [["node", node_id]]
    paths = [["node", node_id, key] for key in (before.keys() | after.keys()) - {"id", "data"}
             if before.get(key) != after.get(key)]
    data_before, data_after = before.get("data", {}), after.get("data", {})
    paths += [["node", node_id, key] for key in (data_before.keys() | data_after.keys()) - {"params"}
              if data_before.get(key) != data_after.get(key)]
    params_before, params_after = data_before.get("params", {}), data_after.get("params", {})
    paths += [["node", node_id, "params", name] for name in params_before.keys() | params_after.keys()
              if params_before.get(name) != params_after.get(name)]
    return paths


def clash(these: Iterable[Path], those: Iterable[Path]) -> bool:
    """Whether any path of one set is a prefix of (or equal to) a path of the other."""
    these = [tuple(p) for p in these]
    prefixes = {p[:i] for p in these for i in range(len(p) + 1)}
    whole = set(these)
    return any(tuple(p) in prefixes or any(tuple(p[:i]) in whole for i in range(len(p))) for p in those)
