"""The Stats tab of Node details: a fixed-size summary of every port of the node, computed
on the server (apps.stats, cached per capture), under the Inspector's message rules."""
from __future__ import annotations

from typing import Any

from django.utils.safestring import mark_safe

from apps.stats.cache import port_summary
from apps.stats.tab import histogram_svg, stats_rows

from .panel import Inspection, forward_rows


def stats_rows_for(ins: Inspection) -> list[dict[str, Any]]:
    inputs, outputs, _ = forward_rows(ins)
    found = []
    for row in inputs + outputs:
        entry: dict[str, Any] = {"row": row, "summary": None, "rows": [], "chart": ""}
        serial = ins.serials.get((row.producer, row.port))
        if row.state.has_value and serial is not None:
            summary = port_summary(ins.run_id, row.producer, row.port, serial, row.state.value)
            entry.update(summary=summary, rows=stats_rows(summary), chart=mark_safe(histogram_svg(summary)))
        found.append(entry)
    return found
