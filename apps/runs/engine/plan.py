"""Which nodes run, in which order, and everything wrong with them (reference §2).

``plan_run`` turns a normalised document into a Plan or raises: DraftGraph when nothing is
triggered, InvalidGraph with every problem of the runnable part. Problems outside it (a
draft corner of the canvas) become warnings and block nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection

from apps.graphs.document import NOTE_TYPE, is_trigger, node_label
from apps.graphs.edits import EditError
from apps.graphs.nodes.base import Node, resolve, types_compatible
from apps.graphs.nodes.packs import missing_packs
from apps.graphs.reach import data_links, reachable
from apps.graphs.subgraphs import flatten

# Worded for both ways of adding a node: dragging it (with a script) or its sidebar button (without).
DRAFT_MESSAGE = ("No entry points defined. Add a Start node from the palette (drag it onto the canvas or "
                 "press its button) and connect it to the node you want to start execution from.")


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
    # (seed, device) -> every node's execution-cache key (executor.cache_keys). A plan is
    # made once for a class's example and shared; its keys cross to the run worker with it.
    cache_keys: dict[tuple, dict[str, str]] = field(default_factory=dict, compare=False, repr=False)


def plan_run(doc: dict[str, Any], enabled: Collection[str] | None = None) -> Plan:
    """``enabled``: the packs this server has on (None: every installed one). A graph using
    a pack that is missing or off does not run, whatever part of it would."""
    try:
        doc = flatten(doc)  # blocks run as their inside, inner nodes under "block/inner" ids
    except EditError as exc:
        raise InvalidGraph([str(exc)]) from None
    nodes = {n["id"]: n for n in doc["nodes"] if n["type"] != NOTE_TYPE}
    if missing := missing_packs({n["type"] for n in nodes.values()}, enabled):
        raise InvalidGraph([m.message() for m in missing])
    edges = [e for e in doc["edges"] if e["source"] in nodes and e["target"] in nodes]
    triggers = [e for e in edges if is_trigger(e)]
    data_edges = [e for e in edges if not is_trigger(e)]
    if not triggers:
        raise DraftGraph()

    runnable = _executable_set(nodes, triggers, data_edges)
    into: dict[str, list[dict]] = {}          # every edge by its target, once: planning stays linear
    for e in data_edges:
        into.setdefault(e["target"], []).append(e)
    triggered_by: dict[str, set[str]] = {}
    for e in triggers:
        triggered_by.setdefault(e["target"], set()).add(e["source"])
    params = _Params(nodes)
    problems: list[str] = []
    warnings: list[str] = []
    planned: dict[str, PlannedNode] = {}
    for node_id, node in nodes.items():
        found = problems if node_id in runnable else warnings
        item = _plan_node(node, nodes, into.get(node_id, ()), triggered_by.get(node_id, set()), params, found)
        if item and node_id in runnable:
            planned[node_id] = item
    order = _topological(planned, problems) if not problems else []
    if problems:
        raise InvalidGraph(problems)
    return Plan(nodes={i: planned[i] for i in order}, warnings=[f"Draft: {w}" for w in warnings],
                skipped=[i for i in nodes if i not in runnable])


class _Params:
    """Each node's class and coerced params, worked out once however many edges read them."""

    def __init__(self, nodes: dict[str, dict[str, Any]]):
        self._nodes = nodes
        self._known: dict[str, tuple[type[Node] | None, dict[str, Any], list[str]]] = {}

    def __call__(self, node_id: str) -> tuple[type[Node] | None, dict[str, Any], list[str]]:
        known = self._known.get(node_id)
        if known is None:
            node = self._nodes[node_id]
            cls = resolve(node["type"])
            values, problems = cls.coerce_params(node["data"].get("params", {})) if cls else ({}, [])
            known = self._known[node_id] = (cls, values, problems)
        return known


def _executable_set(nodes, triggers, data_edges) -> set[str]:
    """Entry points, everything they feed, everything feeding that, and their Start nodes."""
    reached = reachable([e["target"] for e in triggers], data_links(data_edges))
    reached = reachable(reached, data_links(data_edges, backward=True))
    return reached | {e["source"] for e in triggers if e["target"] in reached}


def _plan_node(node, nodes, incoming, triggered_by: set[str], coerced: _Params,
               problems: list[str]) -> PlannedNode | None:
    node_id, type_key = node["id"], node["type"]
    cls, params, param_problems = coerced(node_id)
    if cls is None:
        problems.append(f"Unknown node type: {type_key} ({node_id})")
        return None
    where = f"{node_id} ({type_key})"
    problems.extend(f"Node {where}: {p}" for p in param_problems)

    inputs: dict[str, tuple[str, str]] = {}
    for e in incoming:
        source = nodes[e["source"]]
        source_cls, source_params, _ = coerced(e["source"])
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
        out = next((p for p in source_cls.output_ports(source_params) if p.name == e["sourceHandle"]), None)
        if out is None:
            problems.append(f"Invalid output port '{e['sourceHandle']}' on {source['type']} ({source['id']})")
        elif not types_compatible(out.type, port.type):
            problems.append(f"Type mismatch: {source['id']}.{out.name} ({out.type}) -> "
                            f"{node_id}.{port.name} ({port.type})")
    for port in cls.input_ports(params):
        if not port.optional and port.name not in inputs:
            problems.append(f"Missing required input '{port.name}' on node {where}")
    after = {src for src, _ in inputs.values()} | triggered_by
    return PlannedNode(node_id, type_key, node_label(node), cls, params, inputs, frozenset(after))


def _topological(planned: dict[str, PlannedNode], problems: list[str]) -> list[str]:
    """Kahn's order, level by level, keeping document order within a level; a cycle is a problem."""
    position = {i: k for k, i in enumerate(planned)}
    waiting: dict[str, int] = {}
    dependents: dict[str, list[str]] = {}
    for i, node in planned.items():
        deps = [d for d in node.after if d in position]
        waiting[i] = len(deps)
        for d in deps:
            dependents.setdefault(d, []).append(i)
    level = [i for i, n in waiting.items() if n == 0]
    order: list[str] = []
    while level:
        order += level
        unblocked = []
        for i in level:
            for j in dependents.get(i, ()):
                waiting[j] -= 1
                if waiting[j] == 0:
                    unblocked.append(j)
        level = sorted(unblocked, key=position.__getitem__)
    if len(order) < len(planned):
        done = set(order)
        problems.append("Graph contains a cycle: " + ", ".join(sorted(i for i in planned if i not in done)))
        return []
    return order
