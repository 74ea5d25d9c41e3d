"""Segments (Compare segment): a HEAD and a TAIL node and every node on a data path from
one to the other. Pure functions over a document; no Django here."""
from __future__ import annotations

from typing import Any

from . import document
from .reach import data_links, reachable

NO_PATH = "Segment: no path from head to tail"


def head_and_tail(doc: dict[str, Any], a: str, b: str) -> tuple[str, str]:
    """The node further left on the canvas is the head (a tie: the first in node order)."""
    order = {n["id"]: i for i, n in enumerate(doc["nodes"])}
    x = {n["id"]: n["position"]["x"] for n in doc["nodes"]}
    first, second = sorted((a, b), key=lambda n: (x[n], order[n]))
    return first, second


def path_set(doc: dict[str, Any], head: str, tail: str) -> set[str]:
    """Forward reach from head ∩ backward reach from tail over data edges; empty if no path.
    Rejoining branches stay in, side branches drop out."""
    members = reachable([head], data_links(doc["edges"])) & reachable([tail], data_links(doc["edges"], backward=True))
    return members if head in members and tail in members else set()


def entering_edges(doc: dict[str, Any], members: set[str]) -> list[dict[str, Any]]:
    """Every data edge from outside the set into any member, once each."""
    seen, edges = set(), []
    for e in doc["edges"]:
        if document.is_trigger(e) or e["target"] not in members or e["source"] in members:
            continue
        key = (e["source"], e["sourceHandle"], e["target"], e["targetHandle"])
        if key not in seen:
            seen.add(key)
            edges.append(e)
    return edges


def find(doc: dict[str, Any], segment_id: str) -> dict[str, Any] | None:
    return next((g for g in doc.get("segmentGroups", []) if g["id"] == segment_id), None)


def members_of(doc: dict[str, Any], group: dict[str, Any]) -> set[str]:
    """The group's nodes, or nothing when an end is gone or the path is broken (no bubble)."""
    ids = {n["id"] for n in doc["nodes"]}
    if group["headNodeId"] not in ids or group["tailNodeId"] not in ids:
        return set()
    return path_set(doc, group["headNodeId"], group["tailNodeId"])
