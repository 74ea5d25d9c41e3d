"""The Layers editor's edits: pure functions on a document holding a SequentialModel."""
from __future__ import annotations

import json

import pytest

from apps.graphs import document, layer_edits, layers
from apps.graphs.edits import EditError


def model_doc(*chain) -> dict:
    spec = layers.chain_of([(i, t, p) for i, t, p in chain])
    return document.normalise({"nodes": [{"id": "m", "type": "SequentialModel",
                                          "data": {"params": {"layers": layers.dumps(spec)}}}], "edges": []})


def order(doc) -> list[str]:
    """The layer ids in computing order."""
    return [s.id for s in layers.parse(doc["nodes"][0]["data"]["params"]["layers"]).steps]


def spec(doc) -> dict:
    return json.loads(doc["nodes"][0]["data"]["params"]["layers"])


MLP = (("f", "Flatten", {}), ("l1", "Linear", {"in_features": 4, "out_features": 3}), ("r", "ReLU", {}))


def test_a_new_layer_goes_before_the_output_with_its_defaults():
    doc, made = layer_edits.add_layer(model_doc(*MLP), "m", "Linear")
    assert made == "linear1" and order(doc) == ["f", "l1", "r", "linear1"]
    assert next(n for n in spec(doc)["nodes"] if n["id"] == "linear1")["params"] == {
        "in_features": 512, "out_features": 10, "bias": True}


def test_a_new_layer_can_go_after_a_chosen_one_or_first():
    doc, _ = layer_edits.add_layer(model_doc(*MLP), "m", "Dropout", after="l1")
    assert order(doc) == ["f", "l1", "dropout1", "r"]
    doc, _ = layer_edits.add_layer(doc, "m", "Tanh", after="in")
    assert order(doc) == ["tanh1", "f", "l1", "dropout1", "r"]


def test_the_layers_stay_codefyui_json_text():
    doc, _ = layer_edits.add_layer(model_doc(*MLP), "m", "ReLU")
    text = doc["nodes"][0]["data"]["params"]["layers"]
    assert isinstance(text, str) and json.loads(text)["version"] == 2


def test_removing_a_layer_joins_its_neighbours():
    doc = layer_edits.remove_layer(model_doc(*MLP), "m", "l1")
    assert order(doc) == ["f", "r"]


def test_the_input_and_output_stay():
    with pytest.raises(EditError, match="The Output cannot be removed"):
        layer_edits.remove_layer(model_doc(*MLP), "m", "out")


def test_moving_a_layer_swaps_it_with_its_neighbour():
    doc = layer_edits.move_layer(model_doc(*MLP), "m", "r", "up")
    assert order(doc) == ["f", "r", "l1"]
    doc = layer_edits.move_layer(doc, "m", "f", "down")
    assert order(doc) == ["r", "f", "l1"]
    assert [n["id"] for n in spec(doc)["nodes"]][1:4] == ["r", "f", "l1"]  # weights made in this order


def test_the_first_layer_cannot_move_up():
    with pytest.raises(EditError, match="Layer 'f' cannot move up"):
        layer_edits.move_layer(model_doc(*MLP), "m", "f", "up")


def test_a_layer_cannot_move_across_a_branch():
    doc = model_doc(("c", "Linear", {"in_features": 2, "out_features": 2}), ("add", "Add", {}), ("r", "ReLU", {}))
    raw = spec(doc)
    raw["edges"].append({"id": "skip", "source": "in", "sourceHandle": "p_x", "target": "add"})
    doc["nodes"][0]["data"]["params"]["layers"] = layers.dumps(raw)
    assert not layer_edits.can_move(raw, "add", "up") and not layer_edits.can_move(raw, "r", "up")
    assert layer_edits.can_move(raw, "r", "down") is False


def test_setting_a_layers_params_keeps_the_others():
    doc = layer_edits.set_layer_params(model_doc(*MLP), "m", "l1", {"out_features": "7", "bias": "false"})
    l1 = next(n for n in spec(doc)["nodes"] if n["id"] == "l1")
    assert l1["params"] == {"in_features": 4, "out_features": 7, "bias": False}


def test_a_bad_param_is_named_and_nothing_is_saved():
    before = model_doc(*MLP)
    with pytest.raises(EditError, match=r"Layer 'l1' \(Linear\): 'out_features' value 0 is below minimum 1"):
        layer_edits.set_layer_params(before, "m", "l1", {"out_features": "0"})
    assert order(before) == ["f", "l1", "r"]


def test_an_edit_may_mend_a_broken_graph_but_not_break_a_sound_one():
    doc = model_doc(*MLP, ("bad", "Bogus", {}))
    doc = layer_edits.remove_layer(doc, "m", "bad")
    assert order(doc) == ["f", "l1", "r"]


def test_the_sample_shape_is_kept_beside_the_params():
    doc = layer_edits.set_sample_shape(model_doc(*MLP), "m", "2, 1,2")
    assert doc["nodes"][0]["data"]["inputShape"] == "2, 1, 2"
    assert layer_edits.sample_shape(doc["nodes"][0]) == [2, 1, 2]
    with pytest.raises(EditError, match="'input shape' needs 1 to 6 sizes"):
        layer_edits.set_sample_shape(doc, "m", "0, 3")


def test_an_unknown_layer_type_or_node_is_refused():
    with pytest.raises(EditError, match="Unknown layer type: Bogus"):
        layer_edits.add_layer(model_doc(*MLP), "m", "Bogus")
    with pytest.raises(EditError, match="There is no layer 'nope'"):
        layer_edits.remove_layer(model_doc(*MLP), "m", "nope")


# -- layer nodes on the canvas as a model ---------------------------------------------------

def canvas(*nodes, edges=()) -> dict:
    return document.normalise({
        "nodes": [{"id": i, "type": t, "position": {"x": 100 * k, "y": 50}, "data": {"params": p}}
                  for k, (i, t, p) in enumerate(nodes)],
        "edges": [{"id": f"c{k}", "source": a, "sourceHandle": "tensor", "target": b, "targetHandle": port}
                  for k, (a, b, port) in enumerate(edges)]})


def test_canvas_layers_become_a_sequential_model_beside_them():
    doc = canvas(("conv", "Conv2d", {"in_channels": 1, "out_channels": 2}), ("act", "Activation", {"function": "relu"}),
                 ("flat", "Flatten", {}), ("fc", "Linear", {"in_features": 50, "out_features": 3}),
                 edges=[("conv", "act", "tensor"), ("act", "flat", "tensor"), ("flat", "fc", "tensor")])
    doc, made = layer_edits.model_from_nodes(doc, {"conv", "act", "flat", "fc"})
    model = next(n for n in doc["nodes"] if n["id"] == made)
    assert model["type"] == "SequentialModel" and len(doc["nodes"]) == 5   # the layers stay
    parsed = layers.parse(model["data"]["params"]["layers"])
    assert [(s.id, s.type) for s in parsed.steps] == [("conv", "Conv2d"), ("act", "ReLU"), ("flat", "Flatten"), ("fc", "Linear")]
    assert parsed.steps[0].params["padding"] == 1 and parsed.outputs == [("y", ("fc", None))]
    assert layers.trace_shapes(parsed, [[1, 1, 5, 5]])["fc"] == [1, 3]


def test_a_residual_join_on_the_canvas_becomes_a_merge():
    doc = canvas(("a", "Linear", {"in_features": 4, "out_features": 4}), ("b", "Linear", {"in_features": 4, "out_features": 4}),
                 ("sum", "Add", {}), edges=[("a", "b", "tensor"), ("a", "sum", "tensor_a"), ("b", "sum", "tensor_b")])
    doc, made = layer_edits.model_from_nodes(doc, {"a", "b", "sum"})
    parsed = layers.parse(next(n for n in doc["nodes"] if n["id"] == made)["data"]["params"]["layers"])
    assert [s.sources for s in parsed.steps] == [[("in", "p_x")], [("a", None)], [("a", None), ("b", None)]]


def test_a_node_that_is_not_a_layer_is_named():
    doc = canvas(("fc", "Linear", {}), ("show", "Print", {}))
    with pytest.raises(EditError, match=r"Print \(show\) is not a layer"):
        layer_edits.model_from_nodes(doc, {"fc", "show"})


def test_unwired_canvas_layers_go_in_a_row_left_to_right():
    doc = canvas(("fc", "Linear", {"in_features": 4, "out_features": 2}), ("act", "Activation", {"function": "tanh"}))
    doc["nodes"][0]["position"]["x"] = 500
    doc, made = layer_edits.model_from_nodes(doc, {"fc", "act"})
    parsed = layers.parse(next(n for n in doc["nodes"] if n["id"] == made)["data"]["params"]["layers"])
    assert [s.id for s in parsed.steps] == ["act", "fc"]
