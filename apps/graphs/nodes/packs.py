"""Lesson packs: installable Python distributions that add nodes to the catalogue.

A pack's distribution names a ``Pack`` in the ``codefyui.packs`` entry-point group::

    [project.entry-points."codefyui.packs"]
    foundations = "codefyui_foundations:PACK"

Its nodes' type keys carry the pack's name as a namespace (``foundations:Edu-ColumnStats``),
as CodefyUI's do, so a graph file names the pack it needs. A pack may also bring example
graphs, Markdown docs and an Inspector panel (a template under its package's ``templates/``
folder, which the server's template loader searches). A pack with a panel is a *plugin*.

Nothing here imports Django: which packs an administrator switched on is the web side's
business; it passes that set to ``missing_pack``, the one rule the palette, the document
reader and the run planner share.
"""
from __future__ import annotations

import functools
import importlib.util
import logging
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Callable, Collection

from .base import Node, resolve

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
    # The panel's context from the selected node's type key (None: no node selected).
    panel_context: Callable[[str | None], dict[str, Any]] | None = field(default=None, compare=False)
    docs: str = ""                         # Markdown shown in the Package Center
    distribution: str = field(default="", compare=False)  # the installed distribution's name

    @property
    def is_plugin(self) -> bool:
        return self.panel is not None

    def check(self) -> None:
        """Refuse a pack whose node keys do not carry its namespace."""
        for node in self.nodes:
            if not node.type.startswith(f"{self.name}:"):
                raise ValueError(f"pack {self.name!r}: node type {node.type!r} lacks the "
                                 f"'{self.name}:' namespace")

    def example_files(self) -> dict[str, Path]:
        """Its example graphs by slug: the path under ``examples`` without ``.json``
        (folders allowed, as CodefyUI's ``C3-1/LeNet/graph.json``)."""
        if not (self.examples and self.examples.is_dir()):
            return {}
        return {p.relative_to(self.examples).with_suffix("").as_posix(): p for p in sorted(self.examples.rglob("*.json"))}


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


@functools.cache
def installed() -> dict[str, Pack]:
    """The packs of this server, discovered once per process (installing one means a restart)."""
    return discover()


@functools.cache
def template_dirs() -> list[Path]:
    """The ``templates/`` folder of every installed pack's package, found without importing
    it (the settings read this before any app is ready)."""
    found = []
    for point in entry_points(group=GROUP):
        try:
            spec = importlib.util.find_spec(point.module.split(".")[0])
        except (ImportError, ValueError):
            continue
        for location in (spec.submodule_search_locations or []) if spec else []:
            if (Path(location) / "templates").is_dir():
                found.append(Path(location) / "templates")
    return found


PRESET_NAMESPACE = "preset"  # ``preset:Training Pipeline`` names a preset (apps/graphs/presets), not a pack


def pack_name(type_key: str) -> str | None:
    """The pack a namespaced type key belongs to (``deep:Edu-Patchify`` -> ``deep``)."""
    name = type_key.split(":", 1)[0] if ":" in type_key else None
    return None if name == PRESET_NAMESPACE else name


@dataclass(frozen=True)
class MissingPack:
    """A pack a graph needs that this server does not offer now, and what an administrator does."""

    name: str
    installed: bool                        # installed (but off, or without the node), or not at all
    node: str = ""                         # set when the installed version has no such node

    @property
    def state(self) -> str:
        if not self.installed:
            return "not installed on this server"
        return f"installed here without the node {self.node}" if self.node else "disabled on this server"

    @property
    def remedy(self) -> str:
        if self.installed and not self.node:
            return ("An administrator enables it in Settings → Optional Packs & Plugins → Package Center "
                    "(or in the Django admin).")
        return (f"An administrator installs {'a version of it that has that node' if self.node else 'it'} into "
                "the server's Python environment (pip install with the pack's wheel file) and restarts the server.")

    @property
    def short(self) -> str:
        """What a node's card says."""
        why = "another version" if self.node else "disabled" if self.installed else "not installed"
        return f"Pack {self.name}: {why}"

    def message(self) -> str:
        return f"This graph uses nodes of the pack '{self.name}', which is {self.state}. {self.remedy}"


def missing_pack(type_key: str, enabled: Collection[str] | None = None) -> MissingPack | None:
    """The pack a node type needs that this server does not offer: the namespace of a key
    whose pack is not installed, is installed without that node, or is installed but not in
    ``enabled`` (None: every installed pack is on). None for a built-in node and for one
    whose pack is there. A bare name that resolves to a pack's node (``Edu-KNN``) needs that pack."""
    cls = resolve(type_key)
    name = pack_name(cls.type if cls else type_key)
    if name is None:
        return None
    if name not in installed():
        return None if cls else MissingPack(name, installed=False)  # with a class: registered by hand (tests)
    if cls is None:
        return MissingPack(name, installed=True, node=type_key.split(":", 1)[1])
    return None if enabled is None or name in enabled else MissingPack(name, installed=True)


def missing_packs(type_keys: Collection[str], enabled: Collection[str] | None = None) -> list[MissingPack]:
    """Each pack these node types need that is missing, once per pack (and node it lacks)."""
    found = {(m.name, m.node): m for key in type_keys if (m := missing_pack(key, enabled))}
    return [found[k] for k in sorted(found)]
