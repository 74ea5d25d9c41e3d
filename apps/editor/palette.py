"""The node palette: the sidebar's categories and the quick search. No Django here.
``enabled`` is the set of packs this server has on (None: every installed one): a node of a
pack that is off is not offered."""
from __future__ import annotations

from typing import Collection

from apps.graphs import presets
from apps.graphs.nodes.base import CATEGORY_ORDER, Node, registry
from apps.graphs.nodes.packs import missing_pack

BASIC_CATEGORIES = ("Data", "CNN", "Training", "IO")
QUICK_SEARCH_LIMIT = 20


def catalogue(enabled: Collection[str] | None = None) -> list[type[Node]]:
    """The nodes a student can add (blocks are made by collapsing, not from the palette)."""
    return [cls for key, cls in registry().items()
            if not key.startswith("test:") and not cls.subgraph and missing_pack(key, enabled) is None]


def entries(enabled: Collection[str] | None = None) -> list[type[Node] | presets.Preset]:
    """What the sidebar offers: the nodes, then the presets (each added as its block)."""
    return [*catalogue(enabled), *presets.available()]


def categories(mode: str = "all", enabled: Collection[str] | None = None) -> list[tuple[str, list[type[Node] | presets.Preset]]]:
    """(category, entries) in CodefyUI's order, then the rest A–Z; Basic keeps four. A preset
    sits in its own category, after the nodes."""
    grouped: dict[str, list[type[Node] | presets.Preset]] = {}
    for cls in entries(enabled):
        grouped.setdefault(cls.category, []).append(cls)
    names = [c for c in CATEGORY_ORDER if c in grouped] + sorted(c for c in grouped if c not in CATEGORY_ORDER)
    if mode == "basic":
        names = [c for c in names if c in BASIC_CATEGORIES]
    return [(c, sorted(grouped[c], key=lambda n: (isinstance(n, presets.Preset), n.type))) for c in names]


def quick_search(query: str, enabled: Collection[str] | None = None) -> list[type[Node] | presets.Preset]:
    """At most 20 nodes and presets (also found by their tags), Start first for an empty
    query; never filtered by category mode."""
    q = query.strip().lower()
    nodes = entries(enabled)
    if q:
        def rank(cls):
            name = cls.type.lower()
            return (0 if name.startswith(q) else 1 if q in name else 2, name)
        hits = [c for c in nodes if q in c.type.lower() or q in c.description.lower() or q in c.category.lower()
                or q in getattr(c, "tags", ())]
        hits.sort(key=rank)
    else:
        hits = sorted(nodes, key=lambda c: c.type.lower())
    if "start".startswith(q):
        hits.sort(key=lambda c: c.type != "Start")
    return hits[:QUICK_SEARCH_LIMIT]
