"""Blocks: collapse, expand, flatten for the engine, runs with inner-node captures."""
from __future__ import annotations

import json

import pytest

from apps.graphs import document, edits, subgraphs
from apps.runs.engine import RunOptions, execute, plan_run
from apps.runs.store import MemoryCaptureStore


@pytest.fixture
def doc(walkthrough):
    return document.normalise(walkthrough)


def test_collapse_makes_one_block_whose_ports_are_the_crossing_edges(doc):
    collapsed, block = subgraphs.collapse(doc, {"reshape", "softmax"})
    node = edits.find_node(collapsed, block)
    inside = subgraphs.definition(node)
    assert {n["id"] for n in inside["nodes"]} == {"reshape", "softmax"}
    assert inside["inputs"] == [{"name": "tensor", "node": "reshape", "port": "tensor", "type": "TENSOR"}]
    assert inside["outputs"] == [{"name": "tensor", "node": "softmax", "port": "tensor", "type": "TENSOR"}]
    assert {(e["source"], e["target"]) for e in collapsed["edges"]} == {
        ("start", "input"), ("input", block), (block, "print")}


def test_a_collapsed_graph_round_trips_through_json(doc):
    collapsed, _ = subgraphs.collapse(doc, {"reshape", "softmax"})
    assert document.load(document.dumps(collapsed)) == collapsed


def test_expand_puts_the_nodes_back_wired_as_before(doc):
    collapsed, block = subgraphs.collapse(doc, {"reshape", "softmax"})
    expanded = subgraphs.expand(collapsed, block)
    edges = lambda d: {(e["source"], e.get("sourceHandle"), e["target"], e.get("targetHandle")) for e in d["edges"]}
    assert edges(expanded) == edges(doc) and {n["id"] for n in expanded["nodes"]} == {n["id"] for n in doc["nodes"]}


def test_a_run_executes_the_inside_and_keeps_inner_captures_under_inner_ids(doc):
    collapsed, block = subgraphs.collapse(doc, {"reshape", "softmax"})
    store = MemoryCaptureStore()
    outcome = execute(plan_run(collapsed), RunOptions(run_id="r"), lambda e: None, captures=store)
    assert outcome.status == "succeeded", outcome.error
    assert store.get("r", f"{block}/softmax", "tensor").value.sum().item() == pytest.approx(1.0)
    assert f"{block}/reshape" in outcome.nodes


def test_a_trigger_into_a_block_starts_at_its_first_inner_nodes(doc):
    collapsed, block = subgraphs.collapse(doc, {"input", "reshape"})
    assert any(document.is_trigger(e) and e["target"] == block for e in collapsed["edges"])
    outcome = execute(plan_run(collapsed), RunOptions(run_id="r"), lambda e: None)
    assert outcome.status == "succeeded", outcome.error


def test_collapsing_swallows_markers_whose_ends_went_inside(doc):
    """ST6: Collapse to subgraph swallows a marker (undo brings it back: see the Tab tests)."""
    doc["segmentGroups"] = [{"id": "s", "headNodeId": "reshape", "tailNodeId": "print"}]
    collapsed, _ = subgraphs.collapse(doc, {"reshape", "softmax"})
    assert collapsed["segmentGroups"] == []


def test_a_broken_block_in_a_file_is_named():
    bad = {"nodes": [{"id": "b", "type": "Subgraph", "data": {"params": {"subgraph": {
        "nodes": [{"id": "x"}], "edges": [], "inputs": [{"name": "p", "node": "ghost", "port": "tensor"}], "outputs": []}}}}],
        "edges": []}
    with pytest.raises(document.DocumentError) as broken:
        document.load(json.dumps(bad))
    assert any(p.startswith("nodes[0].data.params.subgraph.") for p in broken.value.problems)


def test_a_block_whose_inside_was_interrupted_reads_interrupted_never_running():
    statuses = {"b/one": {"status": "completed"}, "b/two": {"status": "interrupted"}}
    assert subgraphs.rolled_up_status("b", statuses) == {"status": "interrupted"}
