"""The browser tests' one test-only node, in a module that imports no Django: runs execute
in the server's run workers, which import the module of every node a run plans.

`test:Gate` holds a run until the test releases it (by creating a file in the server's var
dir), so a test can watch a node report Running… and then Completed over the WebSocket
without racing the engine: the walkthrough graph alone runs in milliseconds, usually before
the page that shows it has loaded. Type keys starting with "test:" never appear in the
sidebar, Quick search or the This Server counts, so every other test sees the product as is.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from apps.graphs.nodes.base import Node, Param, Port, register

GATE_WAIT_S = 20


def gate_file(token: str) -> Path:
    return Path(os.environ["CODEFYUI_VAR_DIR"]) / f"e2e-gate-{token}"


@register
class Gate(Node):
    """Test node: passes its tensor on once the file for its token exists (at most 20 s)."""
    type = "test:Gate"
    category = "Utility"
    description = "Waits until the browser test releases it."
    inputs = (Port("tensor"),)
    outputs = (Port("tensor"),)
    params = (Param("token", "string", "", "Released when var/e2e-gate-<token> exists"),)
    cacheable = False

    def run(self, ctx, params, tensor):
        deadline = time.monotonic() + GATE_WAIT_S
        while not gate_file(params["token"]).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return {"tensor": tensor}
