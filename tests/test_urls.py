"""Route names live in namespaces: editor: for the editor's pages and forms, api: for JSON."""
from __future__ import annotations

from django.urls import reverse


def test_editor_routes_are_named_in_the_editor_namespace():
    assert reverse("editor:index") == "/editor/"
    assert reverse("editor:run", args=[3]) == "/editor/3/run"
    assert reverse("editor:node-details", args=[3, "block-1/relu-1"]) == "/editor/3/details/block-1/relu-1/"


RUN = "0f8fad5b-d9cb-469f-a165-70867728950e"  # a run id in its one spelling (the uuid converter's)


def test_api_routes_are_named_in_the_api_namespace():
    assert reverse("api:run", args=[RUN]) == f"/api/runs/{RUN}"
    assert reverse("api:port-value", args=[RUN, "n", "output"]) == f"/api/execution/outputs/{RUN}/n/output"
    assert reverse("api:port-stats-query", args=[RUN]) == f"/api/execution/outputs/{RUN}/stats"
    assert reverse("api:health") == "/api/health"
