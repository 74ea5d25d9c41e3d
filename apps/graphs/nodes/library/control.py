"""Control nodes: where a run begins."""
from __future__ import annotations

from ..base import Port, register
from ._helpers import LibraryNode


@register
class Start(LibraryNode):
    type = "Start"
    category = "Control"
    description = "Where a run begins: connect its trigger to the first node that should run."
    details = (
        "Start does no maths and holds no data. Its grey trigger wire says \"begin here\": "
        "the node it points at runs, together with every node that feeds it or depends on it "
        "through data wires. Nodes not reached from a Start are drafts and are skipped, so "
        "you can keep half-built ideas on the canvas. A graph needs at least one Start."
    )
    outputs = (Port("trigger", "TRIGGER"),)

    def run(self, ctx, params, **inputs):
        return {}
