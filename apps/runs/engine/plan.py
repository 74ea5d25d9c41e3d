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
    feeding: dict[str, list[dict]] = {}   # node -> its incoming data edges, indexed once (linear)
    starting: dict[str, set[str]] = {}    # node -> the Start nodes triggering it
    for e in data_edges:
        feeding.setdefault(e["target"], []).append(e)
    for e in triggers:
        starting.setdefault(e["target"], set()).add(e["source"])
    for node_id, node in nodes.items():
        found = problems if node_id in runnable else warnings
        item = _plan_node(node, nodes, feeding.get(node_id, []), starting.get(node_id, set()), found)
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


def _plan_node(node, nodes, feeding, started_by, problems: list[str]) -> PlannedNode | None:
    node_id, type_key = node["id"], node["type"]
    cls = resolve(type_key)
    if cls is None:
        problems.append(f"Unknown node type: {type_key} ({node_id})")
        return None
    where = f"{node_id} ({type_key})"
    params, param_problems = cls.coerce_params(node["data"].get("params", {}))
    problems.extend(f"Node {where}: {p}" for p in param_problems)

    inputs: dict[str, tuple[str, str]] = {}
    for e in feeding:
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
    after = {src for src, _ in inputs.values()} | started_by
    return PlannedNode(node_id, type_key, node_label(node), cls, params, inputs, frozenset(after))


def _topological(planned: dict[str, PlannedNode], problems: list[str]) -> list[str]:
    """Kahn's order, round by round, each round's ready nodes in document order (n log n);
    a cycle is a problem."""
    position = {node_id: k for k, node_id in enumerate(planned)}
    waiting: dict[str, int] = {}
    dependents: dict[str, list[str]] = {}
    for node_id, node in planned.items():
        before = node.after & planned.keys()
        waiting[node_id] = len(before)
        for other in before:
            dependents.setdefault(other, []).append(node_id)
    ready = [node_id for node_id, count in waiting.items() if not count]
    order: list[str] = []
    while ready:
        order += ready
        unblocked = []
        for node_id in ready:
            for follower in dependents.get(node_id, ()):
                waiting[follower] -= 1
                if not waiting[follower]:
                    unblocked.append(follower)
        ready = sorted(unblocked, key=position.__getitem__)
    if len(order) < len(planned):
        problems.append("Graph contains a cycle: " + ", ".join(sorted(planned.keys() - set(order))))
        return []
    return order
