"""Graph documents: CodefyUI JSON in and out, and clear messages for broken files."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.graphs import document
from apps.runs.engine import DraftGraph, InvalidGraph, plan_run


def test_a_codefyui_file_loads_and_keeps_keys_we_do_not_know(walkthrough):
    walkthrough["presets"] = []
    walkthrough["futureKey"] = {"kept": True}
    walkthrough["nodes"][1]["data"]["colour"] = "teal"
    doc = document.load(json.dumps(walkthrough))
    assert doc["futureKey"] == {"kept": True} and doc["presets"] == []
    assert doc["nodes"][1]["data"]["colour"] == "teal"
    assert json.loads(document.dumps(doc))["futureKey"] == {"kept": True}


def test_the_reference_example_loads_with_its_note_and_segment():
    text = """{"name": "Three logits", "settings": {"seed": 7, "device": "cpu"},
      "nodes": [{"id": "go", "type": "Start", "position": {"x": 0, "y": 0}, "data": {"params": {}}},
                {"id": "x", "type": "TensorInput", "position": {"x": 220, "y": 0}, "data": {"params": {"shape": "1,3", "value_mode": "explicit", "values": [[0.5, 1.0, 2.0]]}}},
                {"id": "p", "type": "Softmax", "position": {"x": 460, "y": 0}, "data": {"params": {"dim": -1}}},
                {"id": "memo", "type": "note", "position": {"x": 220, "y": 150}, "data": {"text": "try dim 0 next"}}],
      "edges": [{"id": "t1", "type": "trigger", "source": "go", "sourceHandle": "trigger", "target": "x", "targetHandle": ""},
                {"id": "d1", "source": "x", "sourceHandle": "tensor", "target": "p", "targetHandle": "tensor"}],
      "presets": [], "segmentGroups": [{"id": "seg-a", "headNodeId": "x", "tailNodeId": "p"}]}"""
    doc = document.load(text)
    assert doc["nodes"][3]["data"] == {"text": "try dim 0 next"}
    assert doc["segmentGroups"] == [{"id": "seg-a", "headNodeId": "x", "tailNodeId": "p"}]
    assert document.run_settings(doc)["seed"] == 7


def test_invalid_json_names_line_and_column():
    with pytest.raises(document.DocumentError) as broken:
        document.load('{\n  "nodes": [,]\n}')
    assert broken.value.problems[0].startswith("Invalid JSON at line 2, column 13")


def test_a_missing_field_names_its_path():
    with pytest.raises(document.DocumentError) as broken:
        document.load('{"nodes": [{"id": "a", "type": "Softmax"}, {"type": "Softmax"}], "edges": [{"source": "a"}]}')
    assert "nodes[1].id: missing" in broken.value.problems
    assert "edges[0].target: missing" in broken.value.problems


def test_an_unknown_node_type_names_the_node():
    with pytest.raises(document.DocumentError) as broken:
        document.load('{"nodes": [{"id": "n7", "type": "Teleport"}], "edges": []}')
    assert broken.value.problems == ["Unknown node type: Teleport (n7)"]


def test_trigger_edge_spellings_are_accepted_and_written_as_type_trigger():
    doc = document.normalise({"nodes": [{"id": "s", "type": "Start"}, {"id": "x", "type": "TensorInput"}],
                              "edges": [{"id": "t", "source": "s", "sourceHandle": "trigger", "target": "x",
                                         "targetHandle": "__trigger", "data": {"type": "trigger"}}]})
    assert doc["edges"][0]["type"] == "trigger" and doc["edges"][0]["targetHandle"] == ""


def test_an_unknown_edge_type_is_rejected():
    with pytest.raises(document.DocumentError) as broken:
        document.normalise({"nodes": [{"id": "a", "type": "Softmax"}],
                            "edges": [{"source": "a", "target": "a", "sourceHandle": "tensor",
                                       "targetHandle": "tensor", "type": "magic"}]})
    assert "edges[0].type: must be 'data' or 'trigger', not 'magic'" in broken.value.problems


def test_a_dangling_edge_is_rejected():
    with pytest.raises(document.DocumentError) as broken:
        document.normalise({"nodes": [{"id": "a", "type": "Softmax"}],
                            "edges": [{"source": "a", "target": "ghost", "sourceHandle": "tensor", "targetHandle": "tensor"}]})
    assert "edges[0]: Edge references missing node 'ghost'" in broken.value.problems


def test_a_bad_seed_is_rejected_and_blank_means_unseeded():
    with pytest.raises(document.DocumentError):
        document.normalise({"nodes": [], "edges": [], "settings": {"seed": "soon"}})
    assert document.run_settings(document.normalise({"nodes": [], "edges": [], "settings": {"seed": ""}}))["seed"] is None


@pytest.mark.parametrize("seed", ["9" * 5000, "²", "1.5", "9" * 19, True])
def test_a_seed_is_a_whole_number_of_at_most_18_digits(seed):
    with pytest.raises(document.DocumentError) as broken:
        document.normalise({"nodes": [], "edges": [], "settings": {"seed": seed}})
    assert broken.value.problems[0].startswith("settings.seed: must be a whole number or blank")
    assert document.run_settings(document.normalise({"nodes": [], "edges": [], "settings": {"seed": " -42 "}}))["seed"] == -42


@pytest.mark.parametrize("text,problem", [
    ('{"nodes": [], "edges": [], "x": NaN}', "Invalid JSON: NaN is not a JSON number (write a number or null)"),
    ('{"nodes": [], "edges": [], "x": -Infinity}', "Invalid JSON: -Infinity is not a JSON number (write a number or null)"),
    ('{"nodes": [{"id": "a", "type": "Start", "position": {"x": 1e400, "y": 0}}], "edges": []}',
     "nodes[0].position.x: must be a finite number"),
    ('{"nodes": [{"id": "a", "type": "Start", "position": {"x": 0, "y": 1' + "0" * 400 + '}}], "edges": []}',
     "nodes[0].position.y: must be a finite number"),
    ("[" * 100_000 + "]" * 100_000, "The file nests lists or objects too deeply to be a graph"),
    ('{"nodes": [], "edges": [], "x": ' + "[" * 200 + "]" * 200 + "}", "The graph nests lists or objects more than 100 deep"),
])
def test_what_no_database_or_browser_could_hold_is_refused_with_a_reason(text, problem):
    """Bad input gets a clear message: numbers JSON has no word for, and nesting past any real graph."""
    with pytest.raises(document.DocumentError) as broken:
        document.load(text)
    assert broken.value.problems == [problem]


def test_nesting_a_real_graph_could_need_is_kept():
    inner, depth = document.load('{"nodes": [], "edges": [], "x": ' + "[" * 90 + "]" * 90 + "}")["x"], 1
    while inner:
        inner, depth = inner[0], depth + 1
    assert depth == 90


def test_not_a_graph_at_all():
    with pytest.raises(document.DocumentError) as broken:
        document.load("[1, 2, 3]")
    assert "JSON object" in broken.value.problems[0]


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=20)
node_like = st.fixed_dictionaries({}, optional={"id": json_values | st.text(max_size=3), "type": st.sampled_from(
    ["Start", "Softmax", "note", "preset:x", "Nope"]) | json_values, "position": json_values, "data": json_values})
graph_like = st.fixed_dictionaries({}, optional={"nodes": st.lists(node_like, max_size=4) | json_values,
                                                 "edges": st.lists(st.dictionaries(st.sampled_from(
                                                     ["id", "source", "target", "sourceHandle", "targetHandle", "type", "data"]),
                                                     json_values), max_size=4) | json_values,
                                                 "settings": json_values, "segmentGroups": json_values, "name": json_values})


@settings(max_examples=300, deadline=None)
@given(graph_like)
def test_any_json_either_loads_or_gets_a_document_error(raw):
    """Bad input gets a clear message, never a crash."""
    try:
        doc = document.normalise(raw)
    except document.DocumentError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
    else:
        assert isinstance(doc["nodes"], list) and isinstance(doc["edges"], list)
        try:
            plan_run(doc)
        except (DraftGraph, InvalidGraph):
            pass


def test_an_import_at_negative_positions_moves_onto_the_canvas_as_a_whole():
    """Issue 49 item 10: CodefyUI's graphs sit at x = -150; ours start at 0 (under the sidebar otherwise)."""
    doc = document.normalise({"nodes": [
        {"id": "a", "type": "Start", "position": {"x": -150, "y": 200}, "data": {}},
        {"id": "b", "type": "Print", "position": {"x": 50, "y": 10}, "data": {}}], "edges": []})
    document.placed_in_view(doc)
    assert [n["position"] for n in doc["nodes"]] == [{"x": 40.0, "y": 230.0}, {"x": 240.0, "y": 40.0}]


def test_a_graph_without_positions_is_laid_out_in_columns_along_its_edges():
    doc = document.normalise({"nodes": [{"id": i, "type": "Print", "data": {}} for i in "cab"], "edges": [
        {"id": "1", "source": "a", "sourceHandle": "value", "target": "b", "targetHandle": "value"},
        {"id": "2", "source": "b", "sourceHandle": "value", "target": "c", "targetHandle": "value"}]})
    document.placed_in_view(doc)
    assert {n["id"]: (n["position"]["x"], n["position"]["y"]) for n in doc["nodes"]} == {
        "a": (40.0, 40.0), "b": (300.0, 40.0), "c": (560.0, 40.0)}
