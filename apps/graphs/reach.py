"""Reachability over a graph's data edges: the one walk that segments, edits (no loops)
and the run planner share. Linear: every node and every edge is visited at most once.
No Django here."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from .document import is_trigger


def data_links(edges: Iterable[dict[str, Any]], *, backward: bool = False) -> dict[str, list[str]]:
    """source -> targets over the data edges (triggers carry no data); ``backward``: target -> sources."""
    links: dict[str, list[str]] = {}
    for e in edges:
        if not is_trigger(e):
            a, b = (e["target"], e["source"]) if backward else (e["source"], e["target"])
            links.setdefault(a, []).append(b)
    return links


def reachable(start: Iterable[str], links: Mapping[str, Iterable[str]]) -> set[str]:
    """Every node reachable from ``start`` along ``links``, the start nodes included."""
    seen = set(start)
    stack = list(seen)
    while stack:
        for nxt in links.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen
