"""Which nodes run, and validation that collects every problem (reference §2)."""
from __future__ import annotations

import pytest

from apps.graphs import document
from apps.runs.engine import DRAFT_MESSAGE, DraftGraph, InvalidGraph, plan_run


def node(node_id, type_key, **params):
    return {"id": node_id, "type": type_key, "position": {"x": 0, "y": 0}, "data": {"params": params}}


def data(source, target, source_port="tensor", target_port="tensor"):
    return {"id": f"{source}-{target}", "source": source, "sourceHandle": source_port,
            "target": target, "targetHandle": target_port}


def trigger(target):
    return {"id": f"t-{target}", "type": "trigger", "source": "start", "sourceHandle": "trigger",
            "target": target, "targetHandle": ""}


def plan(nodes, edges):
    return plan_run(document.normalise({"nodes": nodes, "edges": edges}))


def test_a_graph_without_a_trigger_edge_is_a_draft_and_refused(walkthrough):
    """WK5: without a Start trigger the graph is a draft and Run is rejected with the seed's text."""
    walkthrough["edges"] = [e for e in walkthrough["edges"] if e.get("type") != "trigger"]
    with pytest.raises(DraftGraph) as refused:
        plan_run(document.normalise(walkthrough))
    assert str(refused.value) == DRAFT_MESSAGE == (
        "No entry points defined. Drag a Start node from the palette and connect it to the node "
        "you want to start execution from.")


def test_the_run_order_follows_the_data(walkthrough):
    walkthrough["nodes"].reverse()
    assert list(plan_run(document.normalise(walkthrough)).nodes) == ["start", "input", "reshape", "softmax", "print"]


def test_untriggered_nodes_outside_the_reach_are_a_draft_corner():
    """Nodes not reached from a trigger are pruned; their problems are warnings, not errors."""
    result = plan([node("start", "Start"), node("a", "TensorInput"), node("b", "Softmax"),
                   node("lonely", "Softmax")], [trigger("a"), data("a", "b")])
    assert list(result.nodes) == ["start", "a", "b"]
    assert result.skipped == ["lonely"]
    assert any("Missing required input 'tensor' on node lonely" in w for w in result.warnings)


def test_upstream_feeders_of_the_triggered_part_run_too():
    result = plan([node("start", "Start"), node("a", "TensorInput"), node("b", "TensorInput"), node("add", "Add")],
                  [trigger("a"), data("a", "add", target_port="tensor_a"), data("b", "add", target_port="tensor_b")])
    assert set(result.nodes) == {"start", "a", "b", "add"}


def test_validation_collects_every_problem():
    with pytest.raises(InvalidGraph) as invalid:
        plan([node("start", "Start"), node("a", "TensorInput"), node("add", "Add"), node("d", "Dropout", p=2),
              node("s", "Softmax", dim="x")],
             [trigger("a"), data("a", "add", target_port="tensor_a"), data("add", "d"), data("d", "s"),
              data("a", "s", target_port="nope")])
    problems = invalid.value.problems
    assert "Missing required input 'tensor_b' on node add (Add)" in problems
    assert any("value 2.0 is below" in p or "value 2.0 is above maximum 1" in p for p in problems)
    assert any("'dim' must be a number" in p for p in problems)
    assert "Invalid input port 'nope' on Softmax (s)" in problems


def test_a_type_mismatch_names_both_ports():
    with pytest.raises(InvalidGraph) as invalid:
        plan([node("start", "Start"), node("loss", "Loss"), node("s", "Softmax")],
             [trigger("loss"), data("loss", "s", source_port="loss_fn")])
    assert "Type mismatch: loss.loss_fn (LOSS_FN) -> s.tensor (TENSOR)" in invalid.value.problems


def test_a_cycle_in_the_runnable_part_is_refused():
    with pytest.raises(InvalidGraph) as invalid:
        plan([node("start", "Start"), node("a", "Add"), node("b", "Softmax")],
             [trigger("a"), data("a", "b", target_port="tensor"), data("b", "a", target_port="tensor_a"),
              data("b", "a", target_port="tensor_b") | {"id": "b-a-2"}])
    assert any(p.startswith("Graph contains a cycle") for p in invalid.value.problems)


def test_two_edges_into_one_input_are_refused():
    with pytest.raises(InvalidGraph) as invalid:
        plan([node("start", "Start"), node("a", "TensorInput"), node("b", "TensorInput"), node("s", "Softmax")],
             [trigger("a"), data("a", "s"), data("b", "s")])
    assert any("more than one connection" in p for p in invalid.value.problems)


class _CountedEdge(dict):
    """An edge that counts how often planning reads it."""

    reads = 0

    def __getitem__(self, key):
        _CountedEdge.reads += 1
        return super().__getitem__(key)

    def get(self, key, default=None):
        _CountedEdge.reads += 1
        return super().get(key, default)


def test_planning_is_linear_in_nodes_and_edges():
    """A 10,000-node chain is planned reading each edge a few times, not once per node."""
    size = 10_000
    nodes = [node("start", "Start"), node("n0", "TensorCreate", shape="2")]
    nodes += [node(f"n{i}", "Activation") for i in range(1, size)]
    edges = [trigger("n0")] + [data(f"n{i - 1}", f"n{i}") for i in range(1, size)]
    doc = document.normalise({"nodes": nodes, "edges": edges})
    doc["edges"] = [_CountedEdge(e) for e in doc["edges"]]
    _CountedEdge.reads = 0
    planned = plan_run(doc)
    assert list(planned.nodes)[:3] == ["start", "n0", "n1"] and len(planned.nodes) == size + 1
    assert list(planned.nodes)[-1] == f"n{size - 1}"
    assert _CountedEdge.reads < 30 * len(edges)  # a scan of every edge per node would read 10,000x more
