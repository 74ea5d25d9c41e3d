"""A graph as a plain PyTorch script (engine/to_python.py), refused as Run refuses it.

The editor's Python view, the JSON API and ``manage.py graphpython`` ask here: a draft, a
refused param, a pack that is missing or switched off get Run's own words
(``service.RunRefused``), never a script that fails later.
"""
from __future__ import annotations

from typing import Any

from apps.graphs.models import PackSwitch
from apps.graphs.nodes.packs import pack_name

from . import service
from .engine.to_python import Script, script

RunRefused = service.RunRefused


def python_script(doc: dict[str, Any], switches: bool = True) -> Script:
    """The document's script. ``switches``: whether the administrator's pack switches count
    (the CLI's runs ignore them, as ``service.run_now`` does)."""
    options = service.run_options(doc)
    planned = service.plan(doc)
    if switches and any(pack_name(node.cls.type) for node in planned.nodes.values()):
        planned = service.plan(doc, PackSwitch.enabled_packs())
    return script(planned, doc.get("name", ""), options["seed"], device=options["device"],
                  deterministic=options["deterministic"], gradients=options["gradients"],
                  persist_weights=options["persist_weights"])


def script_filename(name: str) -> str:
    """"<graph>.py": the graph's name with only letters, digits, '-' and '_' kept."""
    kept = "".join(c if (c.isascii() and c.isalnum()) or c in "-_" else "_" for c in name.strip()).strip("_")
    return f"{kept[:80] or 'graph'}.py"
