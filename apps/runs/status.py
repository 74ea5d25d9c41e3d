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


COUNTERS = (("step", "of", "Step"), ("item", "items", "Item"))  # a sampler's steps, Map's items


def progress_line(progress: dict[str, Any] | None) -> dict[str, Any] | None:
    """A node's progress as its card's bar says it: a training node's "Epoch 3/10 · batch 12/45",
    a sampler's "Step 7/20", Map's "Item 2/5"; and how far along it is (value of max)."""
    if not progress:
        return None
    if not progress.get("epochs"):
        for done_key, total_key, word in COUNTERS:
            if progress.get(total_key):
                done, total = progress.get(done_key) or 0, progress[total_key]
                return {"text": f"{word} {done}/{total}", "value": done, "max": total}
        return None
    epoch, epochs = progress.get("epoch") or 1, progress["epochs"]
    batch, batches = progress.get("batch") or 0, progress.get("batches") or 0
    text = f"Epoch {epoch}/{epochs}" + (f" · batch {batch}/{batches}" if batches else "")
    if not batches:
        return {"text": text, "value": epoch - 1, "max": epochs}
    return {"text": text, "value": (epoch - 1) * batches + batch, "max": epochs * batches}
