"""Route names live in namespaces: editor: for the editor's pages and forms, api: for JSON."""
from __future__ import annotations

from django.urls import reverse


def test_editor_routes_are_named_in_the_editor_namespace():
    assert reverse("editor:index") == "/editor/"
    assert reverse("editor:run", args=[3]) == "/editor/3/run"
    assert reverse("editor:node-details", args=[3, "block-1/relu-1"]) == "/editor/3/details/block-1/relu-1/"


def test_api_routes_are_named_in_the_api_namespace():
    assert reverse("api:run", args=["r1"]) == "/api/runs/r1"
    assert reverse("api:port-value", args=["r1", "n", "output"]) == "/api/execution/outputs/r1/n/output"
    assert reverse("api:port-stats-query", args=["r1"]) == "/api/execution/outputs/r1/stats"
    assert reverse("api:health") == "/api/health"
