"""Datasets in real runs: a seeded graph's DataLoader deals the same order on every Run."""
from __future__ import annotations

import torch

from apps.graphs import document
from apps.runs.engine import ExecutionCache, RunOptions, execute, plan_run


def loader_graph(seed=None):
    settings = {} if seed is None else {"seed": seed}
    return document.normalise({"name": "batches", "settings": settings, "nodes": [
        {"id": "start", "type": "Start", "data": {"params": {}}},
        {"id": "digits", "type": "Dataset", "data": {"params": {"name": "Digits"}}},
        {"id": "loader", "type": "DataLoader", "data": {"params": {"batch_size": 64}}},
    ], "edges": [
        {"id": "t", "type": "trigger", "source": "start", "target": "digits"},
        {"id": "d", "source": "digits", "sourceHandle": "dataset", "target": "loader", "targetHandle": "dataset"},
    ]})


def first_epoch(doc, cache):
    outcome = execute(plan_run(doc), RunOptions(run_id="r", seed=doc["settings"].get("seed")),
                      lambda event: None, cache=cache)
    assert outcome.status == "succeeded", outcome.error
    return torch.cat([y for _, y in outcome.outputs["loader"]["dataloader"]])


def test_a_seeded_graph_shuffles_the_same_way_on_every_run():
    cache = ExecutionCache()
    doc = loader_graph(seed=7)
    assert torch.equal(first_epoch(doc, cache), first_epoch(doc, cache))


def test_an_unseeded_graph_shuffles_differently_each_run():
    cache = ExecutionCache()
    doc = loader_graph()
    assert not torch.equal(first_epoch(doc, cache), first_epoch(doc, cache))


def test_another_seed_gives_another_order():
    assert not torch.equal(first_epoch(loader_graph(seed=7), None), first_epoch(loader_graph(seed=8), None))


def test_a_dataset_and_its_loader_count_their_samples_bytes_once():
    """The capture store and the execution cache budget a dataset by the tensors it holds."""
    from apps.runs.engine.storage import count_storages

    outputs = execute(plan_run(loader_graph(seed=1)), RunOptions(run_id="r", seed=1), lambda event: None).outputs
    storages: dict = {}
    count_storages([outputs["digits"]["dataset"], outputs["loader"]["dataloader"]], storages)
    assert sum(storages.values()) == 1438 * 64 * 4 + 1438 * 8
