"""Every node of the catalogue, each of its numeric and text params pushed to an extreme a
student may type (100000 where 10 was meant, a minus sign, a number past 64 bits, a pasted
wall of text), planned and run on a small input: it is refused at planning or its run ends with a message for people, never a
Python error out of a node's own code. A node added later is covered without doing anything."""
from __future__ import annotations

import pytest

from apps.graphs import document
from apps.graphs.nodes.base import registry
from apps.runs.engine import InvalidGraph, RunOptions, execute, plan_run, timeout_message
from apps.runs.engine.executor import ERROR_CHARS

# The Python errors that mean a node's own code met a value it did not expect (a torch
# RuntimeError or ValueError says what torch refused, in its words).
BUGS = ("TypeError", "AttributeError", "KeyError", "IndexError", "NameError", "UnboundLocalError",
        "ZeroDivisionError", "OverflowError", "AssertionError", "RecursionError")
EXTREMES = {"int": (0, -1, 100_000, 10**9, 2**31 - 1, 2**64 + 1), "float": (-1.0, 1e30, float("nan"), float("inf")),
            "string": ("100000,100000", "-5", "7" * 5000), "select": ("x" * 5000,), "bool": ("maybe" * 1000,)}
TIMEOUT_S = 10   # far more than any of these tiny runs takes
# Sizes set to fit the small input, so that a size mismatch does not hide what an extreme does.
FITTING = {"in_channels": 3, "num_features": 3, "num_channels": 3, "in_features": 8, "input_size": 8, "embed_dim": 8,
           "d_model": 8, "hidden_dim": 8, "state_dim": 8}


def runnable_nodes() -> list[str]:
    """Every node type a graph can hold but blocks (they run as their inside) and Start."""
    return sorted(k for k, n in registry().items() if not n.subgraph and k != "Start")


def graph(node_type: str, params: dict, shape: str) -> dict:
    """Start -> the node, each of its tensor inputs fed one small random tensor of that shape."""
    cls = registry()[node_type]
    nodes = [{"id": "start", "type": "Start"}, {"id": "node", "type": node_type, "data": {"params": params}}]
    tensor_ins = [p.name for p in cls.inputs if p.type == "TENSOR"]
    first = "x" if tensor_ins else "node"
    edges = [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": first}]
    if tensor_ins:
        nodes.append({"id": "x", "type": "TensorInput",
                      "data": {"params": {"shape": shape, "value_mode": "random", "seed": 1}}})
        edges += [{"id": f"e-{port}", "source": "x", "sourceHandle": "tensor", "target": "node", "targetHandle": port}
                  for port in tensor_ins]
    return {"nodes": nodes, "edges": edges}


@pytest.mark.parametrize("shape", ["2,3,8,8", "4,8"])   # an image batch, rows of features
@pytest.mark.parametrize("node_type", runnable_nodes())
def test_extreme_params_are_refused_or_fail_with_a_message_for_people(node_type, shape):
    cls = registry()[node_type]
    fitting = {p.name: FITTING[p.name] for p in cls.params if p.name in FITTING}
    variants = [fitting] + [{**fitting, p.name: v} for p in cls.params for v in EXTREMES.get(p.kind, ())]
    for params in variants:
        try:
            plan = plan_run(document.normalise(graph(node_type, params, shape)))
        except (document.DocumentError, InvalidGraph) as refused:   # refused with its problems listed
            assert all(len(problem) <= ERROR_CHARS for problem in getattr(refused, "problems", [str(refused)]))
            continue
        outcome = execute(plan, RunOptions(run_id="extremes", max_elements=1_000_000, timeout_s=TIMEOUT_S),
                          lambda event: None)
        assert outcome.status in ("succeeded", "failed"), (params, outcome.status, outcome.error)
        node = outcome.nodes.get("node")
        error = (node.error if node else None) or outcome.error or ""
        assert not error.startswith(BUGS), (params, error)
        # a size is checked before it is worked on: 10**9 layers are refused, not counted one by one
        assert error != timeout_message(TIMEOUT_S), (params, error)
        assert len(error) <= ERROR_CHARS, (params, error)   # a pasted wall of text is not echoed whole
        # what a node's code let through from torch or numpy, in their words
        assert not error.startswith(f"{node_type} failed: "), (params, error)
