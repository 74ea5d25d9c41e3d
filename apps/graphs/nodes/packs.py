"""Lesson packs: installable Python distributions that add nodes to the catalogue.

A pack's distribution names a ``Pack`` in the ``codefyui.packs`` entry-point group::

    [project.entry-points."codefyui.packs"]
    foundations = "codefyui_foundations:PACK"

Its nodes' type keys carry the pack's name as a namespace (``foundations:Edu-ColumnStats``),
as CodefyUI's do, so a graph file names the pack it needs. Nothing here imports Django:
whether a pack is enabled on this server is the web side's business.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

from .base import Node

log = logging.getLogger("codefyui.packs")

GROUP = "codefyui.packs"


@dataclass(frozen=True)
class Pack:
    name: str                              # the namespace of its type keys
    title: str
    version: str
    description: str
    nodes: tuple[type[Node], ...] = ()
    examples: Path | None = None           # a folder of example graphs (CodefyUI JSON)
    panel: str | None = None               # a template docking in the Inspector's column
    docs: str = ""                         # Markdown shown in the Package Center
    distribution: str = field(default="", compare=False)  # the installed distribution's name

    def check(self) -> None:
        """Refuse a pack whose node keys do not carry its namespace."""
        for node in self.nodes:
            if not node.type.startswith(f"{self.name}:"):
                raise ValueError(f"pack {self.name!r}: node type {node.type!r} lacks the "
                                 f"'{self.name}:' namespace")


def discover() -> dict[str, Pack]:
    """Every pack installed in this Python environment, by name. A pack that fails to load
    is logged and left out: one broken pack never takes the catalogue down."""
    packs: dict[str, Pack] = {}
    for point in entry_points(group=GROUP):
        try:
            pack = point.load()
            if not isinstance(pack, Pack):
                raise TypeError(f"{point.value} is a {type(pack).__name__}, not a Pack")
            pack.check()
        except Exception:
            log.exception("pack %s could not be loaded", point.name)
            continue
        dist = point.dist.name if point.dist is not None else ""
        packs[pack.name] = Pack(**{**pack.__dict__, "distribution": dist})
    return dict(sorted(packs.items()))


def pack_name(type_key: str) -> str | None:
    """The pack a namespaced type key belongs to (``deep:Edu-Patchify`` -> ``deep``)."""
    return type_key.split(":", 1)[0] if ":" in type_key else None
