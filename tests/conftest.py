"""Shared fixtures: one torch thread, a fresh capture store and cache per test, users."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from apps.runs.store import MemoryCaptureStore, set_store

torch.set_num_threads(1)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def example(name: str) -> dict:
    return json.loads((EXAMPLES / f"{name}.json").read_text())


@pytest.fixture
def walkthrough() -> dict:
    """The seed's walkthrough graph: TensorInput 1,4,4 explicit -> Reshape 1,16 -> Softmax -> Print."""
    return example("walkthrough")


@pytest.fixture(autouse=True)
def fresh_store():
    store = MemoryCaptureStore()
    set_store(store)
    yield store
    set_store(None)


@pytest.fixture(autouse=True)
def fresh_cache():
    """The server-wide execution cache starts empty for every test."""
    from apps.runs import service
    service.clear_cache()
    yield


@pytest.fixture
def student(django_user_model):
    return django_user_model.objects.create_user("ada", password="pw-ada-123")


@pytest.fixture
def stranger(django_user_model):
    return django_user_model.objects.create_user("eve", password="pw-eve-123")


@pytest.fixture
def student_client(client, student):
    client.force_login(student)
    return client
