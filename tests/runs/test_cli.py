"""python manage.py rungraph: runs a graph file without a server."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def rungraph(*args, cwd=ROOT):
    result = subprocess.run([sys.executable, "manage.py", "rungraph", *map(str, args)], cwd=cwd,
                            capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout, result.stderr


@pytest.fixture
def graph_file(tmp_path, walkthrough):
    def write(doc=walkthrough, name="graph.json"):
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return path
    return write


def test_a_good_graph_prints_each_node_and_the_print_output(graph_file):
    code, out, _ = rungraph(graph_file())
    assert code == 0
    assert "[ok] reshape  tensor [1, 16] torch.float32" in out
    assert "[probabilities]" in out and "Run succeeded" in out


def test_json_output_has_status_nodes_and_log(graph_file):
    code, out, _ = rungraph(graph_file(), "--json", "--seed", "5")
    body = json.loads(out)
    assert code == 0 and body["status"] == "succeeded"
    assert body["nodes"]["softmax"]["outputs"]["tensor"]["shape"] == [1, 16]
    assert any(line.startswith("[probabilities]") for line in body["log"])


def test_a_failed_run_exits_1(graph_file, walkthrough):
    next(n for n in walkthrough["nodes"] if n["id"] == "reshape")["data"]["params"] = {}
    code, out, _ = rungraph(graph_file(walkthrough), "--json")
    body = json.loads(out)
    assert code == 1 and body["status"] == "failed"
    assert "16 values cannot be reshaped to [-1, 784]" in body["nodes"]["reshape"]["error"]
    assert body["nodes"]["print"]["status"] == "skipped"


def test_an_invalid_graph_exits_1_with_its_problems(graph_file):
    path = graph_file(name="broken.json")
    path.write_text('{"nodes": [')
    code, _, err = rungraph(path)
    assert code == 1 and "Invalid JSON at line 1" in err


def test_validate_only_runs_nothing(graph_file):
    code, out, _ = rungraph(graph_file(), "--validate-only")
    assert code == 0 and out.startswith("Valid: 5 nodes would run.")


def test_bad_arguments_exit_2(graph_file):
    assert rungraph("missing.json")[0] == 2
    assert rungraph(graph_file(), "--seed", "abc")[0] == 2


def test_file_nodes_use_the_folder_given_with_files(graph_file, tmp_path):
    """Without --files a file node says the run has no file storage; with it, the file lands there."""
    doc = {"nodes": [
        {"id": "start", "type": "Start", "position": {"x": 0, "y": 0}, "data": {"params": {}}},
        {"id": "model", "type": "SequentialModel", "position": {"x": 200, "y": 0},
         "data": {"params": {"layers": '[{"type": "Linear", "in_features": 2, "out_features": 1}]'}}},
        {"id": "save", "type": "ModelSaver", "position": {"x": 400, "y": 0}, "data": {"params": {"path": "tiny.pt"}}},
    ], "edges": [
        {"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "model", "targetHandle": ""},
        {"id": "m", "source": "model", "sourceHandle": "model", "target": "save", "targetHandle": "model"},
    ]}
    path = graph_file(doc)
    code, out, _ = rungraph(path, "--json")
    assert code == 1 and "no file storage" in json.loads(out)["nodes"]["save"]["error"]
    code, out, _ = rungraph(path, "--json", "--files", tmp_path / "files")
    assert code == 0, out
    assert (tmp_path / "files" / "tiny.pt").is_file()
