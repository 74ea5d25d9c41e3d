"""Pure edits of a graph document: each one change, refused with a message when it cannot be."""
from __future__ import annotations

import random

import pytest

from apps.graphs import edits
from apps.graphs.models import blank_document


@pytest.fixture
def doc(walkthrough):
    from apps.graphs import document
    return document.normalise(walkthrough)


def test_add_node_uses_the_declared_defaults_and_a_readable_id():
    doc, node_id = edits.add_node(blank_document(), "Reshape", 10, 20)
    assert node_id == "reshape-1"
    assert doc["nodes"][0]["data"]["params"] == {"shape": "-1,784"}


def test_grid_snap_snaps_to_24_px():
    """SP17: Grid snap snaps to 24 px, and turning it on snaps the nodes already on the canvas."""
    doc, node_id = edits.add_node(blank_document(), "Softmax", 37, 50, snap_to_grid=True)
    assert doc["nodes"][0]["position"] == {"x": 48.0, "y": 48.0}
    doc = edits.move_node(doc, node_id, 100, 13)
    assert edits.snap_all(doc)["nodes"][0]["position"] == {"x": 96.0, "y": 24.0}


def test_connecting_replaces_the_old_edge_into_that_input(doc):
    doc = edits.connect(doc, "input", "tensor", "softmax", "tensor")
    into_softmax = [e for e in doc["edges"] if e["target"] == "softmax"]
    assert [(e["source"], e["sourceHandle"]) for e in into_softmax] == [("input", "tensor")]


def test_a_type_mismatch_is_refused_with_both_ports(doc):
    doc, loss = edits.add_node(doc, "Loss", 0, 0)
    with pytest.raises(edits.EditError, match=r"Type mismatch: Loss.loss_fn \(LOSS_FN\) cannot feed Softmax.tensor \(TENSOR\)"):
        edits.connect(doc, loss, "loss_fn", "softmax", "tensor")


def test_a_loop_is_refused(doc):
    with pytest.raises(edits.EditError, match="loop"):
        edits.connect(doc, "softmax", "tensor", "reshape", "tensor")


def test_start_connects_its_trigger_to_the_first_node():
    """WK5: a Start node's trigger output connects to the node to execute first."""
    doc, start = edits.add_node(blank_document(), "Start", 0, 0)
    doc, first = edits.add_node(doc, "TensorInput", 200, 0)
    doc = edits.connect(doc, start, "trigger", first, "")
    assert doc["edges"] == [{"id": "e1", "type": "trigger", "source": start, "sourceHandle": "trigger",
                             "target": first, "targetHandle": ""}]


def test_deleting_a_node_drops_its_edges_and_markers(doc):
    doc["segmentGroups"] = [{"id": "s", "headNodeId": "reshape", "tailNodeId": "print"}]
    doc = edits.delete_nodes(doc, {"print"})
    assert all("print" not in (e["source"], e["target"]) for e in doc["edges"])
    assert doc["segmentGroups"] == []


def test_bad_params_are_all_named_and_nothing_is_changed(doc):
    with pytest.raises(edits.EditError) as refused:
        edits.set_params(doc, "input", {"dtype": "float99", "seed": "soon"})
    assert "'dtype' must be one of" in str(refused.value) and "'seed' must be a number" in str(refused.value)
    assert doc["nodes"][1]["data"]["params"]["dtype"] == "float32"


def test_changing_the_shape_keeps_the_values_in_order(doc):
    """WK2: the values grid is sized from shape; on reshape values are kept in order, padded or cut."""
    doc = edits.set_params(doc, "input", {"shape": "1,2,3"})
    assert doc["nodes"][1]["data"]["params"]["values"] == [[[0.5, -1.0, 2.0], [0.0, 1.5, 0.25]]]
    doc = edits.set_params(doc, "input", {"shape": "2,5"})
    assert doc["nodes"][1]["data"]["params"]["values"][1] == [0.25, 0.0, 0.0, 0.0, 0.0]


def test_fill_and_random_fill_the_grid():
    """WK2: Fill 0, Fill 1 and Random (values in [-1, 1]) fill the 16-cell grid."""
    doc, node = edits.add_node(blank_document(), "TensorInput", 0, 0)
    doc = edits.set_params(doc, node, {"value_mode": "explicit"})
    ones = edits.set_grid(doc, node, fill="1")
    assert edits.flat_values(ones["nodes"][0]["data"]["params"]["values"]) == [1.0] * 16
    randoms = edits.flat_values(edits.set_grid(doc, node, fill="random", rng=random.Random(1))["nodes"][0]["data"]["params"]["values"])
    assert len(randoms) == 16 and all(-1 <= v <= 1 for v in randoms) and len(set(randoms)) > 1


def test_typed_cells_must_be_numbers(doc):
    cells = [str(i) for i in range(15)] + ["many"]
    with pytest.raises(edits.EditError, match=r"Not a number: cell 16 \('many'\)"):
        edits.set_grid(doc, "input", cells=cells)


def test_more_than_512_cells_cannot_be_edited_in_the_grid(doc):
    doc = edits.set_params(doc, "input", {"shape": "1,32,32"})
    with pytest.raises(edits.EditError, match="1024 values; the grid can edit at most 512"):
        edits.set_grid(doc, "input", fill="0")


def test_auto_layout_puts_each_node_right_of_what_feeds_it(doc):
    laid = {n["id"]: n["position"]["x"] for n in edits.auto_layout(doc, width=2000)["nodes"]}
    assert laid["start"] < laid["input"] < laid["reshape"] < laid["softmax"] < laid["print"]


def test_auto_layout_wraps_to_the_canvas_width(doc):
    """Issue 13 item 4: columns that do not fit the canvas go on a line below, never past its edge."""
    laid = {n["id"]: n["position"] for n in edits.auto_layout(doc, width=720)["nodes"]}
    assert all(p["x"] + 184 <= 720 for p in laid.values())
    assert laid["start"]["x"] < laid["input"]["x"] < laid["reshape"]["x"]   # the first line
    assert laid["softmax"]["x"] == laid["start"]["x"] and laid["softmax"]["y"] > laid["reshape"]["y"]
    assert laid["softmax"]["x"] < laid["print"]["x"] and laid["print"]["y"] == laid["softmax"]["y"]


def _overlap(a: dict, b: dict) -> bool:
    return abs(a["x"] - b["x"]) < 184 and abs(a["y"] - b["y"]) < 100


def test_nodes_added_without_a_drop_point_never_land_on_each_other():
    """Issue 13 item 4: the sidebar's buttons put each new node in a free place, next to the
    selected node when there is room, and within the canvas beside the side column."""
    doc, placed = blank_document(), []
    for type_ in ("TensorInput", "Reshape", "Softmax", "Print", "Start", "Reshape", "Softmax"):
        x, y = edits.free_place(doc, near=placed[-1] if placed else "")
        doc, node_id = edits.add_node(doc, type_, x, y)
        placed.append(node_id)
    positions = [n["position"] for n in doc["nodes"]]
    assert not any(_overlap(a, b) for i, a in enumerate(positions) for b in positions[i + 1:])
    assert positions[1]["x"] > positions[0]["x"] and positions[1]["y"] == positions[0]["y"]  # right of the selected
    assert all(p["x"] + 184 <= 720 for p in positions)


def test_the_move_buttons_step_two_grid_cells_and_stay_on_the_canvas():
    """Issue 13 item 4: without a script a node is moved by its panel's arrow buttons."""
    doc, node_id = edits.add_node(blank_document(), "Reshape", 0, 96)
    moves = {name: (x, y) for name, _, x, y in edits.nudges(edits.find_node(doc, node_id))}
    assert moves == {"left": (0.0, 96.0), "up": (0.0, 48.0), "down": (0.0, 144.0), "right": (48.0, 96.0)}


def test_applying_the_values_grid_sets_value_mode_explicit():
    """Issue 13 item 5: typing values is one step: the grid's Apply sets value_mode explicit."""
    doc, node = edits.add_node(blank_document(), "TensorInput", 0, 0)
    assert edits.params_of(edits.find_node(doc, node))["value_mode"] == "random"
    doc = edits.set_grid(doc, node, cells=[str(i) for i in range(16)])
    assert edits.params_of(edits.find_node(doc, node))["value_mode"] == "explicit"


def test_a_blank_name_is_ignored(doc):
    assert edits.rename_node(doc, "reshape", "   ") is doc
    assert edits.rename_node(doc, "reshape", "flatten it")["nodes"][2]["data"]["label"] == "flatten it"


def test_fewer_script_ports_remove_the_edges_of_the_ports_that_went():
    """A PythonScript's port counts set its ports; an edge into or out of a port that went goes too."""
    doc = {"nodes": [{"id": "a", "type": "TensorInput", "position": {"x": 0, "y": 0}, "data": {"params": {}}},
                     {"id": "s", "type": "PythonScript", "position": {"x": 200, "y": 0},
                      "data": {"params": {"input_ports": 2, "output_ports": 2}}},
                     {"id": "p", "type": "Print", "position": {"x": 400, "y": 0}, "data": {"params": {}}}],
           "edges": [{"id": "e1", "source": "a", "sourceHandle": "tensor", "target": "s", "targetHandle": "in1"},
                     {"id": "e2", "source": "a", "sourceHandle": "tensor", "target": "s", "targetHandle": "in2"},
                     {"id": "e3", "source": "s", "sourceHandle": "out2", "target": "p", "targetHandle": "tensor"}]}
    changed = edits.set_params(doc, "s", {"input_ports": "1", "output_ports": "1"})
    assert [e["id"] for e in changed["edges"]] == ["e1"]
    assert [e["id"] for e in edits.set_params(doc, "s", {"input_ports": "3"})["edges"]] == ["e1", "e2", "e3"]


def test_a_scripts_code_keeps_plain_line_ends():
    doc = {"nodes": [{"id": "s", "type": "PythonScript", "position": {"x": 0, "y": 0}, "data": {"params": {}}}], "edges": []}
    changed = edits.set_params(doc, "s", {"code": "def run(inputs, params):\r\n    return 1\r\n"})
    assert changed["nodes"][0]["data"]["params"]["code"] == "def run(inputs, params):\n    return 1\n"
