"""The product's ASGI application, plus the browser tests' one test-only node (nodes.py)."""
from __future__ import annotations

from codefyui.asgi import application  # noqa: F401  (the product's entry point, unchanged)

from tests.e2e import nodes  # noqa: F401  (registers test:Gate; the run workers import it by itself)
