"""The one reachability walk: data edges only, start included, each node once."""
from __future__ import annotations

from apps.graphs.reach import data_links, reachable

EDGES = [
    {"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "a", "targetHandle": ""},
    {"id": "1", "source": "a", "sourceHandle": "out", "target": "b", "targetHandle": "in"},
    {"id": "2", "source": "b", "sourceHandle": "out", "target": "c", "targetHandle": "in"},
    {"id": "3", "source": "a", "sourceHandle": "out", "target": "c", "targetHandle": "other"},
]


def test_the_walk_follows_data_edges_forward_and_backward():
    assert reachable(["a"], data_links(EDGES)) == {"a", "b", "c"}
    assert reachable(["c"], data_links(EDGES, backward=True)) == {"a", "b", "c"}


def test_a_trigger_is_not_a_path():
    assert reachable(["start"], data_links(EDGES)) == {"start"}


def test_a_long_chain_is_walked_without_recursion():
    chain = [{"id": str(i), "source": f"n{i}", "sourceHandle": "o", "target": f"n{i + 1}", "targetHandle": "i"}
             for i in range(50_000)]
    assert len(reachable(["n0"], data_links(chain))) == 50_001
