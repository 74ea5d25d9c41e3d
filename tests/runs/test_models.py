"""SequentialModel through the engine: persisted weights and the size limit."""
from __future__ import annotations

from apps.graphs import document, layers
from apps.runs.engine import WEIGHTS, RunOptions, execute, plan_run

SMALL = layers.dumps(layers.chain_of([("l1", "Linear", {"in_features": 4, "out_features": 3})]))


def model_graph(spec: str = SMALL) -> dict:
    return document.normalise({"nodes": [
        {"id": "start", "type": "Start"},
        {"id": "model", "type": "SequentialModel", "data": {"params": {"layers": spec}}},
    ], "edges": [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger",
                  "target": "model", "targetHandle": "trigger"}]})


def run(doc, **options):
    return execute(plan_run(doc), RunOptions(run_id=options.pop("run_id", "r"), **options), lambda e: None)


def test_persist_weights_keeps_the_model_between_runs():
    first = run(model_graph(), persist_weights=True, weights_scope="tab-models", run_id="a")
    second = run(model_graph(), persist_weights=True, weights_scope="tab-models", run_id="b")
    assert first.outputs["model"]["model"] is second.outputs["model"]["model"]
    assert any("continues with the weights kept from the previous run" in line for line in second.log)
    assert WEIGHTS.reset("tab-models") == 1


def test_the_server_limit_holds_for_each_weight_tensor():
    outcome = run(model_graph(), max_elements=10)
    assert "would need a tensor of shape [3, 4] (12 elements)" in outcome.nodes["model"].error


def test_the_server_limit_holds_for_a_layers_weights_together():
    """The weight (12) and the bias (3) fit one by one; the layer (15) does not."""
    outcome = run(model_graph(), max_elements=13)
    assert "Layer 'l1' of SequentialModel would need 15 elements" in outcome.nodes["model"].error
