"""Persist weights' store (apps/runs/engine/weights.py): bounded by count, least recently used first."""
from __future__ import annotations

import torch

from apps.runs.engine.weights import WeightStore


def layer() -> torch.nn.Module:
    return torch.nn.Linear(2, 2)


def test_past_its_bound_the_least_recently_used_layer_goes_not_all():
    store = WeightStore(max_modules=2)
    first, _ = store.get_or_build("tab-a", "n1", "s", layer)
    store.get_or_build("tab-b", "n1", "s", layer)
    assert store.get_or_build("tab-a", "n1", "s", layer) == (first, True)   # used: now the most recent
    store.get_or_build("tab-c", "n1", "s", layer)                           # tab-b's goes
    assert (store.count("tab-a"), store.count("tab-b"), store.count("tab-c")) == (1, 0, 1)


def test_a_new_structure_drops_the_nodes_old_weights_and_a_tab_is_replaced_whole():
    store = WeightStore()
    store.get_or_build("tab", "n1", "old", layer)
    store.get_or_build("tab", "n2", "s", layer)
    assert store.get_or_build("tab", "n1", "new", layer)[1] is False and store.count("tab") == 2
    kept = [(("tab", "n3", "s"), layer())]
    store.replace("tab", kept)
    assert store.entries("tab") == kept and store.reset("tab") == 1 and store.count("tab") == 0
