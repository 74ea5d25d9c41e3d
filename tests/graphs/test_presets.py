"""Presets: CodefyUI's ``preset:`` nodes and a file's own ``presets[]`` become blocks on import,
and run as the nodes inside them."""
from __future__ import annotations

import pytest
import torch

from apps.graphs import document, edits, presets, subgraphs
from apps.runs.engine import RunOptions, execute, plan_run
from codefyui import conf


def graph(*nodes, edges=(), embedded=None):
    doc = {"name": "presets", "nodes": [{"id": "start", "type": "Start"}, *nodes], "edges": list(edges)}
    if embedded is not None:
        doc["presets"] = embedded
    return doc


def node(node_id, type_key, **params):
    return {"id": node_id, "type": type_key, "position": {"x": 0, "y": 0}, "data": {"params": params}}


def preset_node(node_id, name, internal=None):
    return {"id": node_id, "type": f"preset:{name}", "position": {"x": 300, "y": 40},
            "data": {"params": {}, "internalParams": internal or {}}}


def wire(source, source_port, target, target_port):
    return {"source": source, "sourceHandle": source_port, "target": target, "targetHandle": target_port}


def trigger(target):
    return {"source": "start", "target": target, "type": "trigger"}


def images(shape):
    return node("x", "TensorInput", shape=shape)


def run(doc):
    outcome = execute(plan_run(document.normalise(doc)), RunOptions(run_id="r", seed=1), lambda event: None)
    assert outcome.status == "succeeded", outcome.error
    return outcome.outputs


def doubler(name="Doubler", node_type="ScalarMultiply"):
    """A file's own preset: one ScalarMultiply by 2, its tensor ports exposed."""
    return {"preset_name": name, "category": "Custom", "description": "", "tags": [],
            "nodes": [{"id": "times", "type": node_type, "params": {"scalar": 2.0}}], "edges": [],
            "exposed_inputs": [{"name": "in", "internal_node": "times", "internal_port": "tensor"}],
            "exposed_outputs": [{"name": "out", "internal_node": "times", "internal_port": "tensor"}],
            "exposed_params": []}


# -- the product's presets ---------------------------------------------------------------------

def test_the_three_presets_of_codefyui_ship():
    assert set(presets.builtin()) == {"Simple CNN Classifier", "LSTM Sequence", "Training Pipeline"}
    for preset in presets.builtin().values():
        assert preset.description and preset.level in ("beginner", "intermediate")


@pytest.mark.parametrize("name", ["Simple CNN Classifier", "LSTM Sequence", "Training Pipeline"])
def test_every_preset_becomes_a_block_with_its_exposed_ports(name):
    assert presets.builtin()[name].runnable  # every node it holds is in the catalogue
    doc = document.normalise(graph(preset_node("p", name)))
    block = edits.find_node(doc, "p")
    inside = subgraphs.definition(block)
    preset = presets.builtin()[name]
    assert block["type"] == "Subgraph" and block["data"]["label"] == name
    assert [n["id"] for n in inside["nodes"]] == [n["id"] for n in preset.nodes]
    assert [p["name"] for p in inside["inputs"]] == [p["name"] for p in preset.inputs]
    assert [p["name"] for p in inside["outputs"]] == [p["name"] for p in preset.outputs]
    assert "ANY" not in {p["type"] for p in inside["inputs"] + inside["outputs"]}


def test_simple_cnn_classifier_runs_as_its_inner_nodes():
    doc = graph(images("2,1,8,8"), preset_node("cnn", "Simple CNN Classifier"),
                edges=[trigger("x"), wire("x", "tensor", "cnn", "tensor")])
    outputs = run(doc)
    assert list(outputs["cnn/pool2"]["tensor"].shape) == [2, 64, 2, 2]
    assert {"cnn/conv1", "cnn/act1", "cnn/pool1", "cnn/conv2", "cnn/act2"} <= set(outputs)


def test_internal_params_override_the_presets_own():
    doc = graph(images("1,4,6"), preset_node("seq", "LSTM Sequence", {"lstm": {"input_size": 6, "hidden_size": 3}}),
                edges=[trigger("x"), wire("x", "tensor", "seq", "tensor")])
    outputs = run(doc)
    assert list(outputs["seq/act"]["tensor"].shape) == [1, 4, 3]
    assert outputs["seq/act"]["tensor"].abs().max() < 1  # through tanh


def test_a_block_of_a_preset_feeds_the_nodes_after_it():
    doc = graph(images("1,1,8,8"), preset_node("cnn", "Simple CNN Classifier", {"conv2": {"out_channels": 2}}),
                node("flat", "Flatten"),
                edges=[trigger("x"), wire("x", "tensor", "cnn", "tensor"), wire("cnn", "tensor", "flat", "tensor")])
    assert list(run(doc)["flat"]["tensor"].shape) == [1, 8]


def test_training_pipeline_takes_the_model_twice():
    inside = subgraphs.definition(edits.find_node(document.normalise(graph(preset_node("tp", "Training Pipeline"))), "tp"))
    assert [(p["name"], p["node"], p["type"]) for p in inside["inputs"]] == [
        ("model", "train_loop", "MODEL"), ("model_for_opt", "optimizer", "MODEL")]
    assert next(n for n in inside["nodes"] if n["id"] == "dataset")["data"]["params"]["name"] == "Digits"


def test_an_imported_preset_round_trips_as_its_block():
    doc = document.normalise(graph(preset_node("cnn", "Simple CNN Classifier")))
    assert document.load(document.dumps(doc)) == doc


# -- a file's own presets ------------------------------------------------------------------------

def test_an_embedded_preset_expands_where_the_product_lacks_it():
    doc = graph(images("1,3"), preset_node("d", "Doubler"), embedded=[doubler()],
                edges=[trigger("x"), wire("x", "tensor", "d", "in")])
    outputs = run(doc)
    assert torch.equal(outputs["d/times"]["tensor"], 2 * outputs["x"]["tensor"])


def test_the_products_preset_wins_over_an_embedded_one_of_the_same_name():
    doc = document.normalise(graph(preset_node("p", "LSTM Sequence"), embedded=[doubler("LSTM Sequence")]))
    assert [n["type"] for n in subgraphs.definition(doc["nodes"][1])["nodes"]] == ["LSTM", "Activation"]


def test_an_unknown_preset_is_refused_by_name_and_a_malformed_definition_is_skipped():
    with pytest.raises(document.DocumentError) as error:
        document.normalise(graph(preset_node("p", "Doubler"), embedded=[{"preset_name": "Doubler"}, None, 3]))
    assert error.value.problems == ["Unknown preset: Doubler (p)"]


def test_an_embedded_preset_with_an_unknown_node_type_says_which():
    with pytest.raises(document.DocumentError, match="Unknown node type: Nope"):
        document.normalise(graph(preset_node("p", "Doubler"), embedded=[doubler(node_type="Nope")]))


def test_presets_nested_past_ten_levels_are_refused():
    endless = doubler("Endless", node_type="preset:Endless")
    with pytest.raises(document.DocumentError, match="Preset nesting exceeds the maximum depth of 10"):
        document.normalise(graph(preset_node("p", "Endless"), embedded=[endless]))


def test_nested_presets_cannot_multiply_past_the_node_limit(monkeypatch):
    monkeypatch.setattr(conf, "MAX_GRAPH_NODES", 50)
    fan = {**doubler("Fan"), "nodes": [{"id": f"n{i}", "type": "preset:Doubler", "params": {}} for i in range(8)]}
    deeper = {**doubler("Deeper"), "nodes": [{"id": f"n{i}", "type": "preset:Fan", "params": {}} for i in range(8)]}
    with pytest.raises(document.DocumentError, match="more nodes than a graph may have"):
        document.normalise(graph(preset_node("p", "Deeper"), embedded=[doubler(), fan, deeper]))


# -- the palette adds them ---------------------------------------------------------------------------

def test_adding_a_preset_from_the_palette_places_its_block():
    doc, block_id = edits.add_node(document.normalise(graph()), "preset:Simple CNN Classifier", 120, 48)
    block = edits.find_node(doc, block_id)
    assert block_id == "simple-cnn-classifier-1" and block["position"] == {"x": 120.0, "y": 48.0}
    assert block["data"]["label"] == "Simple CNN Classifier"
    assert len(subgraphs.definition(block)["nodes"]) == 6
    assert document.normalise(doc) == doc


def test_a_preset_whose_nodes_the_server_lacks_is_not_offered(monkeypatch):
    broken = presets.Preset.parse({**doubler(node_type="Nope"), "preset_name": "Broken"})
    monkeypatch.setitem(presets.builtin(), "Broken", broken)
    assert not broken.runnable and broken not in presets.available()
    with pytest.raises(edits.EditError, match="Unknown node type: preset:Broken"):
        edits.add_node(document.normalise(graph()), "preset:Broken", 0, 0)


# -- the params a preset exposes ---------------------------------------------------------------

def test_a_preset_block_shows_the_params_the_preset_exposes():
    doc = document.normalise(graph(preset_node("seq", "LSTM Sequence", {"lstm": {"hidden_size": 8}})))
    shown = [(inner["id"], param.name, label) for inner, param, label in edits.block_params(doc["nodes"][1])]
    assert shown == [("lstm", "input_size", "Features per step"), ("lstm", "hidden_size", "Hidden size"),
                     ("lstm", "num_layers", "Stacked layers"), ("lstm", "bidirectional", "Read both ways"),
                     ("act", "function", "Activation")]


def test_setting_a_blocks_param_changes_its_inner_node():
    doc = document.normalise(graph(preset_node("seq", "LSTM Sequence")))
    changed = edits.set_params(doc, "seq", {"lstm.hidden_size": "12", "act.function": "relu"})
    inner = {n["id"]: n["data"]["params"] for n in subgraphs.definition(edits.find_node(changed, "seq"))["nodes"]}
    assert inner["lstm"]["hidden_size"] == 12 and inner["act"]["function"] == "relu"
    with pytest.raises(edits.EditError, match="'hidden_size' value 0 is below minimum 1"):
        edits.set_params(doc, "seq", {"lstm.hidden_size": "0"})


def test_a_collapsed_block_shows_no_params(walkthrough):
    collapsed, block = subgraphs.collapse(document.normalise(walkthrough), {"reshape", "softmax"})
    assert edits.block_params(edits.find_node(collapsed, block)) == []
