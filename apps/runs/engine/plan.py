"""Which nodes run, in which order, and everything wrong with them (reference §2).

``plan_run`` turns a normalised document into a Plan or raises: DraftGraph when nothing is
triggered, InvalidGraph with every problem of the runnable part. Problems outside it (a
draft corner of the canvas) become warnings and block nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apps.graphs.document import NOTE_TYPE, is_trigger, node_label
from apps.graphs.edits import EditError
from apps.graphs.nodes.base import Node, resolve, types_compatible
from apps.graphs.reach import data_links, reachable
from apps.graphs.subgraphs import flatten

DRAFT_MESSAGE = ("No entry points defined. Drag a Start node from the palette and connect it "
                 "to the node you want to start execution from.")


class DraftGraph(Exception):
    def __init__(self) -> None:
        super().__init__(DRAFT_MESSAGE)


class InvalidGraph(Exception):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True)
class PlannedNode:
    id: str
    type: str
    label: str
    cls: type[Node]
    params: dict[str, Any]
    inputs: dict[str, tuple[str, str]]    # input port -> (source node id, source port)
    after: frozenset[str]                 # every node that must finish first (data and trigger)


@dataclass
class Plan:
    nodes: dict[str, PlannedNode]         # in a valid execution order
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)   # draft nodes: not part of this run


def plan_run(doc: dict[str, Any]) -> Plan:
    try:
        doc = flatten(doc)  # blocks run as their inside, inner nodes under "block/inner" ids
    except EditError as exc:
        raise InvalidGraph([str(exc)]) from None
    nodes = {n["id"]: n for n in doc["nodes"] if n["type"] != NOTE_TYPE}
    edges = [e for e in doc["edges"] if e["source"] in nodes and e["target"] in nodes]
    triggers = [e for e in edges if is_trigger(e)]
    data_edges = [e for e in edges if not is_trigger(e)]
    if not triggers:
        raise DraftGraph()

    runnable = _executable_set(nodes, triggers, data_edges)
    problems: list[str] = []
    warnings: list[str] = []
    planned: dict[str, PlannedNode] = {}
    for node_id, node in nodes.items():
        found = problems if node_id in runnable else warnings
        item = _plan_node(node, nodes, data_edges, triggers, found)
        if item and node_id in runnable:
            planned[node_id] = item
    order = _topological(planned, problems) if not problems else []
    if problems:
        raise InvalidGraph(problems)
    return Plan(nodes={i: planned[i] for i in order}, warnings=[f"Draft: {w}" for w in warnings],
                skipped=[i for i in nodes if i not in runnable])


def _executable_set(nodes, triggers, data_edges) -> set[str]:
    """Entry points, everything they feed, everything feeding that, and their Start nodes."""
    reached = reachable([e["target"] for e in triggers], data_links(data_edges))
    reached = reachable(reached, data_links(data_edges, backward=True))
    return reached | {e["source"] for e in triggers if e["target"] in reached}


def _plan_node(node, nodes, data_edges, triggers, problems: list[str]) -> PlannedNode | None:
    node_id, type_key = node["id"], node["type"]
    cls = resolve(type_key)
    if cls is None:
        problems.append(f"Unknown node type: {type_key} ({node_id})")
        return None
    where = f"{node_id} ({type_key})"
    params, param_problems = cls.coerce_params(node["data"].get("params", {}))
    problems.extend(f"Node {where}: {p}" for p in param_problems)

    inputs: dict[str, tuple[str, str]] = {}
    for e in (e for e in data_edges if e["target"] == node_id):
        source = nodes[e["source"]]
        source_cls = resolve(source["type"])
        port = cls.input_port(e["targetHandle"], params)
        if port is None:
            problems.append(f"Invalid input port '{e['targetHandle']}' on {type_key} ({node_id})")
            continue
        if e["targetHandle"] in inputs:
            problems.append(f"Input '{port.name}' on node {where} has more than one connection; keep one")
            continue
        inputs[port.name] = (e["source"], e["sourceHandle"])
        if source_cls is None:
            continue
        source_params, _ = source_cls.coerce_params(source["data"].get("params", {}))
        out = next((p for p in source_cls.output_ports(source_params) if p.name == e["sourceHandle"]), None)
        if out is None:
            problems.append(f"Invalid output port '{e['sourceHandle']}' on {source['type']} ({source['id']})")
        elif not types_compatible(out.type, port.type):
            problems.append(f"Type mismatch: {source['id']}.{out.name} ({out.type}) -> "
                            f"{node_id}.{port.name} ({port.type})")
    for port in cls.input_ports(params):
        if not port.optional and port.name not in inputs:
            problems.append(f"Missing required input '{port.name}' on node {where}")
    after = {src for src, _ in inputs.values()} | {e["source"] for e in triggers if e["target"] == node_id}
    return PlannedNode(node_id, type_key, node_label(node), cls, params, inputs, frozenset(after))


def _topological(planned: dict[str, PlannedNode], problems: list[str]) -> list[str]:
    """Kahn's order, keeping document order among ready nodes; a cycle is a problem."""
    waiting = {i: set(n.after) & planned.keys() for i, n in planned.items()}
    order: list[str] = []
    while waiting:
        ready = [i for i, deps in waiting.items() if not deps]
        if not ready:
            problems.append("Graph contains a cycle: " + ", ".join(sorted(waiting)))
            return []
        for i in ready:
            del waiting[i]
            order.append(i)
        for deps in waiting.values():
            deps.difference_update(ready)
    return order
