"""codefyui/memo.py: a result is found again only for a document of the same content, with the
same arguments and the same settings it depends on; and where the API and the run service use it."""
from __future__ import annotations

import copy

import pytest

from apps.graphs import document
from apps.graphs.nodes import base
from apps.runs import service
from codefyui import conf
from codefyui.memo import ByContent
from tests.demo_pack import demo_pack, graph_with  # noqa: F401  (demo_pack: a fixture)


class Counted:
    def __init__(self):
        self.calls = 0

    def __call__(self, doc, *args):
        self.calls += 1
        if doc.get("bad"):
            raise ValueError("bad document")
        return {"made from": copy.deepcopy(doc), "args": args}


def test_the_same_content_finds_the_same_result_and_anything_else_makes_it_again():
    made = Counted()
    memo = ByContent(made)
    first = memo({"nodes": [1, 2]}, "x")
    assert memo({"nodes": [1, 2]}, "x") is first and made.calls == 1      # another object, the same content
    assert memo({"nodes": [1, 3]}, "x") is not first and made.calls == 2  # other content
    assert memo({"nodes": [1, 2]}, "y")["args"] == ("y",) and made.calls == 3
    assert memo({"nodes": [1, 2]}, "x", depends=(5,)) is not first and made.calls == 4
    assert memo({"nodes": [1.0, 2]}, "x") is not first                     # 1.0 is not 1 in a document


def test_nan_is_not_taken_for_null_nor_an_error_kept():
    made = Counted()
    memo = ByContent(made)
    memo({"value": None})
    assert memo({"value": float("nan")})["made from"]["value"] != None and made.calls == 2  # noqa: E711
    for _ in range(2):
        with pytest.raises(ValueError):
            memo({"bad": True})
    assert made.calls == 4


def test_it_keeps_the_last_entries_and_no_large_document():
    made = Counted()
    memo = ByContent(made, entries=2, max_bytes=100)
    for i in range(3):
        memo({"i": i})
    memo({"i": 2})
    memo({"i": 0})                      # the oldest went
    assert made.calls == 4
    big = {"text": "x" * 200}
    memo(big), memo(big)
    assert made.calls == 6
    assert memo({1: "not JSON keys"}) and made.calls == 7   # nothing to key by: made each time


def test_a_document_is_checked_again_when_its_limits_change(walkthrough, monkeypatch):
    assert document.normalised(walkthrough) is document.normalised(copy.deepcopy(walkthrough))
    monkeypatch.setattr(conf, "MAX_GRAPH_NODES", 2)
    with pytest.raises(document.DocumentError, match="CODEFYUI_MAX_GRAPH_NODES"):
        document.normalised(walkthrough)


def test_a_graph_is_planned_again_for_other_nodes_or_packs(demo_pack, monkeypatch):
    doc = document.normalise(graph_with("demo:Double"))
    first = service.plan(doc, {"demo"})
    assert service.plan(copy.deepcopy(doc), ["demo"]) is first
    with pytest.raises(service.RunRefused, match="demo"):
        service.plan(doc, set())          # the administrator turned the pack off
    monkeypatch.delitem(base._REGISTRY, "demo:Double")
    with pytest.raises(service.RunRefused, match="demo"):
        service.plan(doc, {"demo"})       # its node is not known here any more
