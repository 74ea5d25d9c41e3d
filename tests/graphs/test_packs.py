"""Packs: discovery through entry points, a broken pack left out, and the one rule that
says which pack a node needs (the document reader and the run planner use it). No Django."""
from __future__ import annotations

import logging
from importlib.metadata import EntryPoint

import pytest

from apps.graphs import document
from apps.graphs.nodes import packs
from apps.runs.engine import InvalidGraph, plan_run
from tests.demo_pack import DEMO, demo_pack, graph_with  # noqa: F401


def points(monkeypatch, *values: str) -> None:
    """Entry points of the codefyui.packs group, as installed distributions would declare them."""
    found = [EntryPoint(name=v.split(":")[-1].lower(), value=v, group=packs.GROUP) for v in values]
    monkeypatch.setattr(packs, "entry_points", lambda group: found if group == packs.GROUP else [])


BROKEN = "not a pack"
BAD_KEYS = packs.Pack(name="bad", title="Bad", version="1", description="", nodes=(type("N", (), {"type": "Unspaced"}),))


def test_discovery_finds_a_pack_through_its_entry_point(monkeypatch):
    points(monkeypatch, "tests.demo_pack:DEMO")
    assert packs.discover() == {"demo": DEMO}


def test_the_shipped_packs_are_installed():
    assert {"foundations", "deep", "edu", "rl"} <= set(packs.discover())


@pytest.mark.parametrize("value", ["tests.graphs.test_packs:BROKEN", "tests.graphs.test_packs:BAD_KEYS",
                                   "no_such_module_q7:PACK"])
def test_a_broken_pack_is_left_out_and_logged(monkeypatch, caplog, value):
    points(monkeypatch, "tests.demo_pack:DEMO", value)
    with caplog.at_level(logging.ERROR, logger="codefyui.packs"):
        assert list(packs.discover()) == ["demo"]
    assert "could not be loaded" in caplog.text


def test_a_pack_node_needs_its_pack_only_when_the_pack_is_off(demo_pack):
    assert packs.missing_pack("demo:Double") is None
    assert packs.missing_pack("demo:Double", enabled={"demo"}) is None
    assert packs.missing_pack("Double", enabled=set()) == packs.MissingPack("demo", installed=True)  # bare name
    assert packs.missing_pack("Softmax", enabled=set()) is None


def test_a_key_of_a_pack_not_installed_needs_that_pack():
    assert packs.missing_pack("vision:Edu-Blur") == packs.MissingPack("vision", installed=False)
    assert packs.missing_pack("NoSuchNode") is None  # a bare unknown name names no pack


def test_an_installed_pack_without_the_node_is_named_too(demo_pack):
    assert packs.missing_pack("demo:Triple") == packs.MissingPack("demo", installed=True, node="Triple")


def test_a_graph_using_a_missing_pack_loads_with_its_node_as_it_was():
    doc = document.normalise(graph_with("vision:Edu-Blur"))
    assert doc["nodes"][2]["type"] == "vision:Edu-Blur"


def test_an_unknown_built_in_name_is_still_refused():
    with pytest.raises(document.DocumentError, match="Unknown node type: Blur"):
        document.normalise(graph_with("Blur"))


def test_a_graph_using_a_pack_not_installed_does_not_run_and_says_what_to_do():
    with pytest.raises(InvalidGraph) as refused:
        plan_run(document.normalise(graph_with("vision:Edu-Blur")))
    assert refused.value.problems == [
        "This graph uses nodes of the pack 'vision', which is not installed on this server. An administrator "
        "installs it into the server's Python environment (pip install with the pack's wheel file) and restarts "
        "the server."]


def test_a_graph_using_a_disabled_pack_does_not_run_and_says_what_to_do(demo_pack):
    doc = document.normalise(graph_with("demo:Double"))
    with pytest.raises(InvalidGraph) as refused:
        plan_run(doc, enabled={"foundations"})
    assert refused.value.problems == [
        "This graph uses nodes of the pack 'demo', which is disabled on this server. An administrator enables it "
        "in Settings → Optional Packs & Plugins → Package Center (or in the Django admin)."]
    assert list(plan_run(doc, enabled={"demo"}).nodes) == ["go", "x", "d"]


def test_a_pack_node_inside_a_block_counts_too():
    inner = graph_with("vision:Edu-Blur")
    doc = graph_with("Softmax")
    doc["nodes"].append({"id": "b", "type": "Subgraph", "position": {"x": 0, "y": 200}, "data": {"params": {
        "subgraph": {"nodes": inner["nodes"][1:], "edges": inner["edges"][1:], "inputs": [], "outputs": []}}}})
    with pytest.raises(InvalidGraph, match="'vision'"):
        plan_run(document.normalise(doc))


def test_a_pack_finds_its_templates_folder():
    assert any((p / "foundations" / "formula_sheet.html").is_file() for p in packs.template_dirs())
