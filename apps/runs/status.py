"""How a node's status in a run is worded on its card (the editor page and the pushed
badges say it the same way)."""
from __future__ import annotations

from typing import Any

BADGES = {"running": "Running…", "completed": "Completed", "cached": "Cached", "skipped": "Skipped", "error": "Error",
          "interrupted": "Interrupted"}


def badge(status: dict[str, Any]) -> str:
    kind = status.get("status", "")
    if kind == "error":
        return f"Error: {status.get('error', '')}"
    return BADGES.get(kind, "")
