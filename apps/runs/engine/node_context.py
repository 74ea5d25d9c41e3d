"""What a node sees of the engine: the ``ctx`` a node's ``run`` is given.

``NodeContext`` is made by the executor for each node it runs (and by to_python's ``run_node``
for a script's call into the engine): the node's seed (``node_seed``), logging, verbose steps,
Stop and the deadline, throttled progress, extra captures, modules and kept weights, the run
owner's My files, and script nodes. No Django here.
"""
from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch

from apps.graphs.nodes.base import SCRIPTS_OFF, NodeError
from codefyui import conf

from ..sandbox import ScriptLimits
from . import events as ev
from .files import FileRefused, UserFiles
from .gradients import GradientCapture
from .limits import suspended
from .plan import PlannedNode
from .weights import WEIGHTS, structure_hash

if TYPE_CHECKING:
    from .executor import RunOptions

Emit = Callable[[ev.Event], None]
RunScript = Callable[..., Any]   # sandbox.run_script: (code, inputs, params, limits) -> ScriptResult
SCRIPTS_IN_WORKERS = ("Script nodes run only in a run worker, and this server runs graphs without "
                      "workers (CODEFYUI_RUN_WORKERS).")


def node_seed(seed: int, node_id: str) -> int:
    digest = hashlib.blake2b(f"{seed}:{node_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & (2**63 - 1)


PROGRESS_EVERY_S = 0.25  # a node's progress reaches the socket at most 4 times a second


class NodeContext:
    """What a node's ``run`` is given as ``ctx``: its seed and generator, the size guard, its
    log lines and verbose steps, Stop and the deadline, progress reports, extra captures, its
    layers (kept between runs when the tab keeps weights), My files, and script nodes."""

    def __init__(self, node: PlannedNode, options: RunOptions, device: torch.device, emit: Emit,
                 gradients: GradientCapture | None = None, cancel: threading.Event | None = None,
                 deadline: float = float("inf"), capture: Callable[[str, str, Any], None] | None = None,
                 scripts: RunScript | None = None):
        self.node_id = node.id
        self.device = device
        self.seed = node_seed(options.seed, node.id) if options.seed is not None else None
        self.verbose = options.verbose
        self.gradients = gradients is not None
        self.recording = capture is not None
        self.logs: list[str] = []
        self.steps: list[dict[str, Any]] = []
        self.stopped = False          # the node saw cancelled() come true
        self._options, self._emit, self._node, self._gradients = options, emit, node, gradients
        self._cancel, self._deadline, self._capture = cancel or threading.Event(), deadline, capture
        self._scripts = scripts
        self._progress: dict[str, Any] | None = None
        self._progress_sent = 0.0

    def generator(self) -> torch.Generator:
        g = torch.Generator()
        if self.seed is not None:
            g.manual_seed(self.seed)
        else:
            g.seed()
        return g

    def check_size(self, elements: int, what: str) -> None:
        if elements > self._options.max_elements:
            raise NodeError(f"{what} would need {elements:,} elements, more than the {self._options.max_elements:,} "
                            "this server allows (CODEFYUI_MAX_TENSOR_ELEMENTS). Use a smaller shape.")

    def log(self, text: str) -> None:
        self.logs.append(str(text))

    def step(self, name: str, description: str = "", tensors: dict | None = None,
             scalars: dict | None = None) -> None:
        if self.verbose:
            self.steps.append({"name": name, "description": description,
                               "tensors": {k: v.detach().clone() for k, v in (tensors or {}).items()},
                               "scalars": dict(scalars or {})})

    def cancelled(self) -> bool:
        if self._cancel.is_set() or time.monotonic() > self._deadline:
            self.stopped = True
        return self.stopped

    def progress(self, **data: Any) -> None:
        """Keep the newest report; send it unless one went out under PROGRESS_EVERY_S ago.
        A report says everything so far, so one held back loses nothing: the next one, or
        ``flush_progress`` when the node returns, carries it."""
        self._progress = data
        if time.monotonic() - self._progress_sent >= PROGRESS_EVERY_S:
            self.flush_progress()

    def flush_progress(self) -> None:
        if self._progress is not None:
            data, self._progress = self._progress, None
            self._emit(ev.Event(ev.PROGRESS, self._options.run_id, self.node_id, data=data))
            self._progress_sent = time.monotonic()

    def capture(self, port: str, value: Any) -> None:
        if self._capture is not None:
            self._capture(self.node_id, port, value)

    def unguarded(self):
        return suspended()

    def module(self, build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
        module = self._module(build)
        if self._gradients is not None:
            self._gradients.built(self.node_id, module, lasting=self._options.persist_weights and bool(self._options.weights_scope))
        return module

    def _module(self, build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
        opts = self._options
        if not (opts.persist_weights and opts.weights_scope):
            return build().to(self.device)
        module, reused = WEIGHTS.get_or_build(opts.weights_scope, self.node_id,
                                              structure_hash(self._node.type, self._node.params),
                                              lambda: build().to(self.device))
        if reused:
            self.log(f"{self._node.label} continues with the weights kept from the previous run")
        return module.to(self.device)

    def user_file(self, name: str, param: str = "path") -> Path:
        try:
            return self._user_files().path(name, param)
        except FileRefused as exc:
            raise NodeError(str(exc)) from None

    def save_user_file(self, name: str, data: bytes, param: str = "path") -> str:
        try:
            return self._user_files().save(name, data, param).name
        except FileRefused as exc:
            raise NodeError(str(exc)) from None

    def list_user_files(self) -> list[str]:
        return sorted(f.name for f in self._user_files().list())

    def _user_files(self) -> UserFiles:
        if not self._options.files_dir:
            raise NodeError("This run has no file storage: files are saved in and loaded from a student's "
                            "My files, which only runs started on the server have")
        return UserFiles(self._options.files_dir, self._options.files_max_bytes, self._options.files_max_files)

    def run_script(self, code: str, inputs: dict[str, Any], params: dict[str, Any]) -> Any:
        if not self._options.scripts:
            raise NodeError(SCRIPTS_OFF)
        if self._scripts is None:
            raise NodeError(SCRIPTS_IN_WORKERS)
        limits = ScriptLimits(wall_s=conf.SCRIPT_TIMEOUT_S, cpu_s=conf.SCRIPT_TIMEOUT_S, memory_mb=conf.SCRIPT_MEMORY_MB,
                              max_elements=self._options.max_elements, scratch_mb=conf.SCRIPT_SCRATCH_MB)
        return self._scripts(code, inputs, params, limits)
