"""Every pack example opens in the editor, runs through the run workers with Verbose internals,
and every pack node's Forward, Steps and Docs read without an error."""
from __future__ import annotations

import json

import pytest

from apps.editor.models import Tab
from apps.graphs import document
from apps.runs import service
from apps.runs.models import Run

from .test_catalogue import EXAMPLES, PACKS

pytestmark = pytest.mark.django_db(transaction=True)

PACK_TYPES = {n.type for p in PACKS.values() for n in p.nodes}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_pack_example_runs_and_its_nodes_read_in_the_inspector(student_client, student, path):
    doc = document.normalise(json.loads(path.read_text()))
    doc["settings"]["verbose_internals"] = True
    tab = Tab.objects.create(owner=student, title=path.stem, document=doc)
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    run = service.wait_for(Run.objects.get(owner=student).pk)
    for node in doc["nodes"]:
        if node["type"] not in PACK_TYPES or node["id"] == "sentence":
            continue
        for view in ("forward", "steps"):
            answer = student_client.get(f"/editor/{tab.pk}/?node={node['id']}&run={run.pk}&view={view}")
            assert answer.status_code == 200, (node["id"], view)
        docs = student_client.get(f"/editor/{tab.pk}/details/{node['id']}/?pane=docs")
        assert docs.status_code == 200 and "Traceback" not in docs.content.decode()
    assert run.status == "succeeded", run.error
