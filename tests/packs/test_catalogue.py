"""Every pack ships every node CodefyUI's pack of that name has, documented, each with an example
graph of our own; every example loads and runs through the engine."""
from __future__ import annotations

import json

import pytest
import torch

from apps.graphs import document
from apps.graphs.nodes.base import CATEGORY_ORDER, registry
from apps.graphs.nodes.library._helpers import LibraryNode
from apps.graphs.nodes.packs import discover
from apps.runs.engine import RunOptions, execute, plan_run

CODEFYUI_NODES = {
    "foundations": {"Edu-ColumnStats", "Edu-KNN", "Edu-LinearRegression", "Edu-LogisticRegression",
                    "Edu-FFN", "Edu-TokenEmbedding"},
    "deep": {"Edu-SelfAttention", "Edu-MultiHeadAttention", "Edu-CrossAttention", "Edu-ResBlock",
             "Edu-Patchify"},
    "edu": {"FilterRows", "SlidingWindow2D", "Classifier", "AdvancedClassifier", "FFNLayer",
            "ActivationLayer", "TrainAndEvaluate", "SentenceEmbedding"},
    "rl": {"Edu-PolicyGradient"},
}
STEPPED = {"foundations:Edu-ColumnStats", "foundations:Edu-KNN", "foundations:Edu-LinearRegression",
           "foundations:Edu-LogisticRegression", "foundations:Edu-FFN",
           "foundations:Edu-TokenEmbedding", "deep:Edu-SelfAttention",
           "deep:Edu-MultiHeadAttention", "deep:Edu-CrossAttention", "deep:Edu-Patchify",
           "edu:FilterRows", "rl:Edu-PolicyGradient"}
PACKS = discover()
EXAMPLES = sorted(path for pack in PACKS.values() for path in pack.examples.glob("*.json"))


def test_each_pack_has_every_node_of_codefyuis_pack():
    assert {name: {n.type.split(":", 1)[1] for n in PACKS[name].nodes} for name in CODEFYUI_NODES} \
        == CODEFYUI_NODES
    for pack in PACKS.values():
        assert all(registry()[node.type] is node for node in pack.nodes)


@pytest.mark.parametrize("node", [n for p in PACKS.values() for n in p.nodes], ids=lambda n: n.type)
def test_every_pack_node_is_declared_for_students(node):
    assert issubclass(node, LibraryNode)
    assert node.category in CATEGORY_ORDER or node.category == "EDU"
    assert node.description and "\n" not in node.description
    assert len(node.details) > 200
    for param in node.params:
        assert param.coerce(param.default) == param.default, param.name
    assert node.records_steps == (node.type in STEPPED)
    node.describe()



def test_every_pack_node_has_an_example_of_its_own_pack():
    for pack in PACKS.values():
        used = {node["type"] for path in pack.examples.glob("*.json")
                for node in json.loads(path.read_text())["nodes"]}
        assert {n.type for n in pack.nodes} <= used, pack.name


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_every_pack_example_loads_and_runs(path, fresh_store):
    doc = document.load(path.read_text())
    settings = document.run_settings(doc)
    outcome = execute(plan_run(doc), RunOptions(run_id=path.stem, seed=settings["seed"],
                                                verbose=settings["verbose_internals"]),
                      lambda event: None, captures=fresh_store)
    assert outcome.status == "succeeded", outcome.error
    assert all(r.status == "completed" for r in outcome.nodes.values())


def run_example(path, store, verbose):
    doc = document.load(path.read_text())
    return execute(plan_run(doc), RunOptions(run_id="r", seed=42, verbose=verbose),
                   lambda event: None, captures=store)


def example(pack: str, name: str):
    return PACKS[pack].examples / f"{name}.json"


def test_steps_reach_the_capture_store_only_with_verbose_internals(fresh_store):
    """TR1: with Verbose internals on, Edu-ColumnStats' trace is kept under __steps__."""
    run_example(example("foundations", "column-stats"), fresh_store, verbose=False)
    assert fresh_store.get("r", "stats", "__steps__") is None
    run_example(example("foundations", "column-stats"), fresh_store, verbose=True)
    trace = fresh_store.get("r", "stats", "__steps__").value
    assert [s["name"] for s in trace] == ["input", "col_sum", "means", "deviations", "stds", "range"]


def test_masked_scores_keep_minus_infinity_through_the_engine(fresh_store):
    run_example(example("deep", "self-attention"), fresh_store, verbose=True)
    trace = {s["name"]: s for s in fresh_store.get("r", "attn", "__steps__").value}
    scores, mask = trace["scaled_scores"]["tensors"]["scores"], trace["mask"]["tensors"]["mask"]
    assert torch.isneginf(scores[mask]).all() and mask.sum() == 10
