"""A stand-in for the engine's RunContext, so nodes can be run without the engine or Django."""
from __future__ import annotations

import contextlib

import pytest
import torch

from apps.graphs.nodes.base import NodeError

torch.set_num_threads(1)


class FakeContext:
    """Implements the RunContext protocol of apps/graphs/nodes/base.py on the CPU."""

    size_limit = 100_000_000

    def __init__(self) -> None:
        self.node_id = "node"
        self.device = torch.device("cpu")
        self.seed = None
        self.verbose = False
        self.gradients = False
        self.logs: list[str] = []
        self.steps: list[dict] = []
        self.reports: list[dict] = []            # progress(**data), every one (the engine sends fewer)
        self.recording = False
        self.captures: dict[str, object] = {}
        self.stop_after: int | None = None       # cancelled() turns true after this many asks
        self._asked = 0

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(0)

    def check_size(self, elements: int, what: str) -> None:
        if elements > self.size_limit:
            raise NodeError(f"{what} would need {elements:,} elements; the limit is "
                            f"{self.size_limit:,}")

    def log(self, text: str) -> None:
        self.logs.append(text)

    def step(self, name, description="", tensors=None, scalars=None) -> None:
        self.steps.append({"name": name, "description": description,
                           "tensors": tensors or {}, "scalars": scalars or {}})

    def module(self, build):
        return build()

    files = None  # the student's own files (an apps.runs.engine.files.UserFiles), when a test gives them

    def user_file(self, name, param="path"):
        return self._files(lambda files: files.path(name, param))

    def save_user_file(self, name, data, param="path"):
        return self._files(lambda files: files.save(name, data, param).name)

    def list_user_files(self):
        return self._files(lambda files: sorted(f.name for f in files.list()))

    def _files(self, use):
        from apps.runs.engine.files import FileRefused
        try:
            return use(self.files)
        except FileRefused as exc:
            raise NodeError(str(exc)) from None

    def cancelled(self) -> bool:
        self._asked += 1
        return self.stop_after is not None and self._asked > self.stop_after

    def progress(self, **data) -> None:
        self.reports.append(data)

    def capture(self, port, value) -> None:
        if self.recording:
            self.captures[port] = value

    def unguarded(self):
        return contextlib.nullcontext()


@pytest.fixture
def ctx() -> FakeContext:
    return FakeContext()
