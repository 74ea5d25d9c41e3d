"""A pack made for the tests: one node (``demo:Double``) and a panel, installed beside the
real packs for one test by standing in for entry-point discovery."""
from __future__ import annotations

import pytest

from apps.graphs.nodes import base, packs
from apps.graphs.nodes.base import Node, Port


class Double(Node):
    type = "demo:Double"
    category = "Tensor Operations"
    description = "Doubles every value."
    inputs = (Port("tensor"),)
    outputs = (Port("tensor"),)

    def run(self, ctx, params, **inputs):
        return {"tensor": inputs["tensor"] * 2}


DEMO = packs.Pack(name="demo", title="Demo", version="9.1", description="A pack for the tests.",
                  nodes=(Double,), docs="Doubling, *step by step*.")


@pytest.fixture
def demo_pack(monkeypatch):
    """The real packs plus Demo, as if Demo's distribution were installed."""
    real = packs.discover()
    monkeypatch.setattr(packs, "discover", lambda: {**real, "demo": DEMO})
    monkeypatch.setitem(base._REGISTRY, Double.type, Double)
    packs.installed.cache_clear()
    yield DEMO
    packs.installed.cache_clear()


def graph_with(type_key: str) -> dict:
    """Start -> TensorInput -> a node of this type."""
    return {"name": "uses a pack", "nodes": [
        {"id": "go", "type": "Start", "position": {"x": 0, "y": 0}, "data": {"params": {}}},
        {"id": "x", "type": "TensorInput", "position": {"x": 220, "y": 0}, "data": {"params": {"shape": "1,4"}}},
        {"id": "d", "type": type_key, "position": {"x": 460, "y": 0}, "data": {"params": {}}},
    ], "edges": [
        {"id": "t", "type": "trigger", "source": "go", "sourceHandle": "trigger", "target": "x", "targetHandle": ""},
        {"id": "e", "source": "x", "sourceHandle": "tensor", "target": "d", "targetHandle": "tensor"},
    ]}
