"""A block: nodes collapsed into one, with the edges that crossed the selection as its ports.
The engine never runs it: it runs the block's inside (apps/graphs/subgraphs.py)."""
from __future__ import annotations

from ..base import Node, NodeError, Param, Port, register


def _ports(params: dict, side: str) -> tuple[Port, ...]:
    definition = params.get("subgraph") or {}
    return tuple(Port(p["name"], p.get("type", "ANY")) for p in definition.get(side, []) if isinstance(p, dict) and p.get("name"))


@register
class Subgraph(Node):
    type = "Subgraph"
    category = "Control"
    description = "A block of nodes collapsed into one; Enter subgraph to see inside."
    details = ("A block hides a stretch of the graph behind one card so the big picture stays readable. Its "
               "input ports are the connections that came into the collapsed nodes, its output ports the "
               "connections that left them. Running the graph runs everything inside the block, and the "
               "Inspector shows what each inner node computed: open the block with Enter subgraph.")
    params = (Param("subgraph", "json", {"nodes": [], "edges": [], "inputs": [], "outputs": []},
                    "The block's inside: its nodes, edges and boundary ports"),)
    subgraph = True

    @classmethod
    def input_ports(cls, params):
        return _ports(params, "inputs")

    @classmethod
    def output_ports(cls, params):
        return _ports(params, "outputs")

    def run(self, ctx, params, **inputs):
        raise NodeError("A block runs as the nodes inside it; it cannot run by itself.")
