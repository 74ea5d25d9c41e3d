"""What one Inspector row shows: a captured value, or exactly one of the seed's messages.

``row_state`` is the only place that decides it, for the Forward, Steps and Backward tabs,
Node details and segments alike. It is pure: callers pass what they know (the run, the
producing node's status in it, the store's answer, the Record settings) and render the
result.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apps.runs.store import UNREACHABLE

NOTHING_CAPTURED = "Nothing captured yet"
WAITING = "Waiting for this node to run…"
RUNNING = "Node is running…"
GRAPH_RUNNING = "Graph is running…"
EXPIRED = "Run data expired — re-run to capture"
TURN_RECORD_ON = "Recording was off for this run: turn on Record node outputs (Settings → Recording & Inspection) and run again"
RUN_TO_CAPTURE = "Run the graph to capture its values"
NO_VALUE = "No value this run"
NOT_IN_RUN = "Not in the last run"
FAILED = "Failed in the last run"
FROM_BLOCK = "From the block's input"
RECORDING_STOPPED = ("Not recorded: this run's outputs grew larger than the capture store's budget "
                     "(CODEFYUI_RUN_OUTPUT_STORE_MAX_MB), so recording stopped before this value")
INTERRUPTED = "Interrupted: the server restarted while this node was running; run the graph again"
NO_GRADIENT = "No gradient: this value does not lead to what the backward pass started from"

# What the store answered for a port.
MISSING = object()        # the store holds nothing for it
NOT_KEPT = object()       # not kept: the run's recording stopped before it (it outgrew the budget)
UNREACHABLE_STORE = object()  # the store that holds it cannot be reached now


@dataclass(frozen=True)
class RunView:
    """What a row needs to know of the run the tab reads."""

    finished: bool
    recorded: bool                  # Record node outputs was on for this run
    nodes: dict[str, dict[str, Any]]  # node id -> {"status": ...}
    log: tuple[dict[str, Any], ...] = ()  # the run log's rows ({node, text, ...}): a script's prints


@dataclass(frozen=True)
class RowState:
    message: str | None = None      # None: show the value
    value: Any = None
    waiting: bool = False           # the row fills in by itself when its producer finishes

    @property
    def has_value(self) -> bool:
        return self.message is None


def row_state(run: RunView | None, producer: str | None, lookup: Any, *, record_now: bool,
              after_run: bool = False, from_block: bool = False) -> RowState:
    """The state of one row.

    ``producer`` is the node whose output the row shows (for an input, the upstream node);
    ``lookup`` is the captured value, MISSING, NOT_KEPT or UNREACHABLE_STORE. ``after_run``:
    the row shows nothing until the whole run has ended (the Backward tab; nodes in a block).
    """
    if run is None:
        return RowState(NOTHING_CAPTURED)
    if after_run and not run.finished:
        return RowState(GRAPH_RUNNING, waiting=True)
    if from_block:
        return RowState(FROM_BLOCK)
    status = run.nodes.get(producer, {}).get("status") if producer else None
    if status == "error":
        return RowState(FAILED)
    if status == "interrupted":
        return RowState(INTERRUPTED)
    if not run.finished:
        if status in (None, "queued"):
            return RowState(WAITING, waiting=True)
        if status == "running":
            return RowState(RUNNING, waiting=True)
    elif status in (None, "skipped"):
        return RowState(NOT_IN_RUN)
    if not run.recorded:
        return RowState(RUN_TO_CAPTURE if record_now else TURN_RECORD_ON)
    if lookup is UNREACHABLE_STORE:
        return RowState(UNREACHABLE)
    if lookup is MISSING:
        return RowState(EXPIRED)
    if lookup is NOT_KEPT:
        return RowState(RECORDING_STOPPED)
    if lookup is None:
        return RowState(NO_VALUE)
    return RowState(value=lookup)


def gradient_state(run: RunView | None, producer: str, lookup: Any, *, record_now: bool) -> RowState:
    """A Backward tab row: a row's state once the whole run has ended (gradients come after the
    forward pass); a gradient kept as None took no part in the backward pass."""
    state = row_state(run, producer, lookup, record_now=record_now, after_run=True)
    return RowState(NO_GRADIENT) if state.message == NO_VALUE else state


def progress_state(run: RunView | None, node_id: str) -> RowState:
    """The Training pane's state: the node's reported progress in the run, or a message.
    Progress is status the run reports whatever Record node outputs says, so it needs no
    capture; the epochs it recorded are rows of their own (``row_state``)."""
    if run is None:
        return RowState(NOTHING_CAPTURED)
    node = run.nodes.get(node_id, {})
    status, progress = node.get("status"), node.get("progress")
    if status == "error" and not progress:
        return RowState(FAILED)
    if status == "interrupted" and not progress:
        return RowState(INTERRUPTED)
    if not run.finished and status in (None, "queued"):
        return RowState(WAITING, waiting=True)
    if run.finished and status in (None, "skipped"):
        return RowState(NOT_IN_RUN)
    if progress is None:
        return RowState(RUNNING, waiting=True) if not run.finished else RowState(NO_VALUE)
    return RowState(value=progress, waiting=not run.finished and status == "running")
