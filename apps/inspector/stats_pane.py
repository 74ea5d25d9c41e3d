"""The Stats tab of Node details: a fixed-size summary of every port of the node, computed
on the server (apps.stats), under the Inspector's message rules."""
from __future__ import annotations

from typing import Any

from codefyui import conf

from .panel import Inspection, forward_rows


def stats_rows_for(ins: Inspection) -> list[dict[str, Any]]:
    from apps.stats.summary import summarise

    inputs, outputs, _ = forward_rows(ins)
    rows = []
    for row in inputs + outputs:
        entry: dict[str, Any] = {"row": row, "summary": None}
        if row.state.has_value:
            entry["summary"] = summarise(row.state.value, threshold=conf.STATS_SAMPLE_THRESHOLD,
                                         sample_size=conf.STATS_SAMPLE_SIZE)
        rows.append(entry)
    return rows
