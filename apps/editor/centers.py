"""The Package Center and the Plugin Center (Settings → Optional Packs & Plugins): what the
packs installed on this server bring, and whether each is on.

A *pack* is an installed distribution registering nodes through the ``codefyui.packs`` entry
point (the four shipped ones, or a third party's); a *plugin* is a pack that also brings a
panel for the Inspector's column (``Pack.panel``), as CodefyUI's plugins bring editor UI.
Installed plugins are counted, and the available ones are those switched on, which a student
can dock. Staff see every pack with its switch; students see the enabled ones. The Package
Center also lists the Dataset node's datasets and the Tokenizer's GPT encodings, installed or
missing; staff see where the missing files go and the command that adds a dataset."""
from __future__ import annotations

import json
from typing import Any

from apps.graphs import data_import, document
from apps.graphs.models import PackSwitch
from apps.graphs.nodes.packs import Pack, installed
from codefyui import conf

INSTALL_HELP = ("This server is offline, so packs cannot be installed from the internet. An administrator "
                "copies a pack's wheel file to the server, runs pip install with it in the server's Python "
                "environment (.venv/bin/pip install codefyui_pack_NAME-VERSION-py3-none-any.whl), and restarts "
                "the server; the pack then shows here, enabled.")


def counts(enabled: frozenset[str]) -> dict[str, int]:
    """The Settings rows' numbers: installed packs, installed and available plugins."""
    plugins = [p for p in installed().values() if p.is_plugin]
    return {"packs": len(installed()), "plugins": len(plugins),
            "plugins_available": sum(p.name in enabled for p in plugins)}


def center(user, plugins_only: bool) -> dict[str, Any]:
    """The packs (or plugins) to list for this user, each with its nodes, examples and docs."""
    enabled = PackSwitch.enabled_packs()
    packs = [p for p in installed().values() if p.is_plugin or not plugins_only]
    shown = [p for p in packs if user.is_staff or p.name in enabled]
    return {"packs": [_row(p, p.name in enabled) for p in shown], "hidden": len(packs) - len(shown),
            "can_switch": user.is_staff, "plugins_only": plugins_only, "install_help": INSTALL_HELP}


# A dataset's or encoding's state, as the page words it, and whether it can be used as it is.
STATES = {"ships": ("✓ Comes with CodefyUI", True), "installed": ("✓ Installed", True),
          "sample": ("◐ Sample only", True), "incomplete": ("✗ Incomplete", False),
          "missing": ("✗ Not installed", False), "unreadable": ("✗ Unreadable", False)}


def datasets(user) -> dict[str, Any]:
    """The Package Center's Datasets section: what the Dataset node and the Tokenizer's GPT
    families have on this server, and (for staff) where the missing files go and the command."""
    def worded(row: dict[str, str]) -> dict[str, Any]:
        label, usable = STATES[row["state"]]
        return {**row, "label": label, "usable": usable}
    return {"datasets": [worded(r) for r in data_import.inventory(conf.DATA_DIR)],
            "encodings": [worded(r) for r in data_import.encodings()],
            "staff": user.is_staff, "command": data_import.IMPORT_COMMAND,
            "data_dir": conf.DATA_DIR, "tokenizer_dir": conf.TOKENIZER_DIR}


def _row(pack: Pack, enabled: bool) -> dict[str, Any]:
    return {"pack": pack, "enabled": enabled, "examples": [_example(slug, path) for slug, path in pack.example_files().items()],
            "nodes": [{"name": cls.type.split(":", 1)[-1], "type": cls.type, "category": cls.category,
                       "description": cls.description} for cls in sorted(pack.nodes, key=lambda c: c.type)]}


def _example(slug: str, path) -> dict[str, str]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        doc = {}
    doc = doc if isinstance(doc, dict) else {}
    return {"slug": slug, "name": str(doc.get("name") or slug), "description": str(doc.get("description") or "")}


def example(pack_name: str, slug: str, enabled: frozenset[str]) -> dict[str, Any] | None:
    """An example graph of an enabled pack, checked as every imported graph is; None if there is none."""
    pack = installed().get(pack_name)
    if pack is None or pack_name not in enabled:
        return None
    path = pack.example_files().get(slug)
    return document.load(path.read_text()) if path else None
