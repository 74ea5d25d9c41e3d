"""The execution cache: one byte budget for the server, storages counted once, least recently
used evicted first, each user in their own scope."""
from __future__ import annotations

import pickle

import torch

from apps.graphs import document
from apps.runs import service
from apps.runs.engine import ExecutionCache, RunOptions, cache_keys, execute, plan_run
from apps.runs.engine import executor
from apps.runs.engine.cache import ENTRY_BYTES

KB = 1024


def floats(n: int) -> torch.Tensor:
    return torch.zeros(n)  # 4 bytes each


def test_the_cache_keeps_its_byte_budget_evicting_the_least_recently_used():
    cache = ExecutionCache(max_bytes=3 * (4 * KB + ENTRY_BYTES))
    for key in "abc":
        cache.put(key, {"tensor": floats(KB)}, [])
    assert cache.get("a") is not None           # a is now the most recently used
    cache.put("d", {"tensor": floats(KB)}, [])
    assert cache.get("b") is None and cache.get("a") and cache.get("c") and cache.get("d")
    assert cache.usage()["bytes"] == 3 * (4 * KB + ENTRY_BYTES) <= cache.usage()["max_bytes"]


def test_a_storage_held_by_several_entries_counts_once():
    cache = ExecutionCache(max_bytes=10 * 2**20)
    whole = floats(KB)
    cache.put("whole", {"tensor": whole}, [])
    cache.put("view", {"tensor": whole.view(32, 32)[:4]}, [])
    assert cache.usage()["bytes"] == 4 * KB + 2 * ENTRY_BYTES
    cache.put("whole", {"tensor": floats(1)}, [])  # replaced: the view still holds the storage
    assert cache.usage()["bytes"] == 4 * KB + 4 + 2 * ENTRY_BYTES


def test_an_entry_larger_than_the_whole_budget_is_not_kept_and_evicts_nothing():
    cache = ExecutionCache(max_bytes=8 * KB + 2 * ENTRY_BYTES)
    cache.put("small", {"tensor": floats(KB)}, [])
    cache.put("huge", {"tensor": floats(4 * KB)}, [])
    assert cache.get("huge") is None and cache.get("small") is not None


def test_a_user_never_gets_another_users_entries():
    cache = ExecutionCache(max_bytes=2**20)
    ada, bob = cache.scope(1), cache.scope(2)
    ada.put("same-key", {"tensor": floats(4)}, ["ada's log"])
    assert bob.get("same-key") is None
    assert ada.get("same-key")[1] == ["ada's log"]
    assert cache.usage()["scopes"] == 1


def tensor_create_graph(size: int) -> dict:
    return document.normalise({
        "nodes": [{"id": "start", "type": "Start"},
                  {"id": "make", "type": "TensorCreate", "data": {"params": {"shape": f"{size},100", "fill": "ones"}}}],
        "edges": [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "make"}]})


def test_runs_with_record_off_keep_the_cache_within_its_budget():
    """Eight runs of distinct TensorCreate shapes, Record node outputs off: the cache stays in budget."""
    budget = 3 * 400 * KB
    cache = ExecutionCache(max_bytes=budget)
    for i in range(8):
        outcome = execute(plan_run(tensor_create_graph(1000 + i)), RunOptions(run_id=f"r{i}", record=False),
                          lambda event: None, cache=cache.scope("ada"))
        assert outcome.status == "succeeded"
        assert cache.usage()["bytes"] <= budget
    assert 1 <= len(cache) < 8


def test_a_plans_keys_are_worked_out_once_per_seed_and_device_and_cross_with_it(monkeypatch):
    """A shared plan (a class's example) keeps its cache keys per seed and device: the server's
    lookup hashes nothing the second time, and a worker's copy of the plan brings them along."""
    planned = plan_run(tensor_create_graph(10))
    hashed = []
    monkeypatch.setattr(executor, "cache_key", lambda *args: hashed.append(args) or f"key{len(hashed)}")
    seeded, unseeded = RunOptions(run_id="a", seed=3), RunOptions(run_id="b", seed=None)
    first = cache_keys(planned, seeded, "cpu")
    assert first and cache_keys(planned, RunOptions(run_id="c", seed=3), "cpu") is first
    assert len(hashed) == len(first)
    assert cache_keys(planned, unseeded, "cpu") is not first           # another seed: keys of its own
    assert cache_keys(planned, RunOptions(run_id="d", verbose=True), "cpu") == {}   # verbose: no cache
    hashed.clear()
    assert cache_keys(pickle.loads(pickle.dumps(planned)), seeded, "cpu") == first and not hashed
    for seed in range(executor._KEYS_KEPT + 1):                      # a student trying seeds: bounded
        cache_keys(planned, RunOptions(run_id="e", seed=seed), "cpu")
    assert len(planned.cache_keys) <= executor._KEYS_KEPT


def test_health_and_this_server_show_the_cache_bytes_against_its_budget(student_client):
    service.clear_cache()
    usage = student_client.get("/api/health").json()["stores"]["execution_cache"]
    assert usage == {"entries": 0, "scopes": 0, "bytes": 0, "max_bytes": 1024 * 2**20}
