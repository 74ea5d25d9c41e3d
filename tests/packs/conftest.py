"""Running pack nodes directly, through the fake context the catalogue's tests use."""
from __future__ import annotations

import pytest
import torch

from apps.graphs.nodes.base import registry
from tests.graphs.conftest import FakeContext


@pytest.fixture
def ctx() -> FakeContext:
    return FakeContext()


@pytest.fixture
def verbose(ctx) -> FakeContext:
    ctx.verbose = True
    return ctx


def run(ctx, type_key: str, raw_params: dict | None = None, **inputs):
    """One node's outputs for these params (which must be valid) and inputs."""
    node = registry()[type_key]
    params, problems = node.coerce_params(raw_params or {})
    assert problems == []
    return node().run(ctx, params, **inputs)


def steps(ctx) -> list[tuple[str, list[str], list[str]]]:
    """The recorded trace as (name, tensor keys, scalar keys), in order."""
    return [(s["name"], sorted(s["tensors"]), sorted(s["scalars"])) for s in ctx.steps]


def step(ctx, name: str) -> dict:
    return next(s for s in ctx.steps if s["name"] == name)


def randn(*shape, seed=0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
