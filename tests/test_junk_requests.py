"""Every route of the project (walked from Django's resolver, as tests/test_isolation.py walks
them), asked by the student who owns the things it is about, with junk in every query
parameter and form field the views read: a number no one could mean, a pasted wall of text, a
NUL byte, a broken percent escape, a path out of the folder. Each answer is below 500 and the
student's graph and tab still load afterwards: a stale or mangled form loses nothing."""
from __future__ import annotations

import json

import pytest
from django.test import Client

from apps.editor.models import Tab
from apps.graphs import document
from apps.graphs.models import Graph
from tests.test_isolation import HTTP_ROUTES, owner, own_teacher, theirs, url_for  # noqa: F401  (fixtures)

JUNK = ("99999999999999999999999", "-1", "x" * 3000, "\x00", "%ff", "1,,2,", "NaN", "../../etc/passwd")
# what the views read from a query string or a form, by name (grep request.GET / request.POST)
NAMES = ("node", "port", "key", "slice", "epoch", "step", "run", "runs", "q", "pane", "page", "wait",
         "max_elements", "colormap", "hidden", "filter", "inside", "tab", "s", "download", "node_id",
         "graph", "_tab", "title", "label", "example", "source", "target", "source_port", "target_port",
         "value", "name", "x", "y", "type", "kind", "index", "direction", "confirm", "revision", "params",
         "document", "layers", "code", "settings", "segment", "head", "tail", "text", "device", "seed")


@pytest.mark.django_db
@pytest.mark.parametrize("template, view", HTTP_ROUTES, ids=[t or "/" for t, _ in HTTP_ROUTES])
def test_junk_in_every_field_is_answered_below_500_and_loses_nothing(template, view, theirs, owner, fresh_store):
    ids = theirs["ids"]
    url = url_for(template, ids)
    client = Client()
    client.force_login(owner)
    for junk in JUNK:
        fields = dict.fromkeys(NAMES, junk)
        answers = {
            "GET": client.get(url, fields),
            "POST": client.post(url, fields),
            "POST json": client.post(url, json.dumps(fields), content_type="application/json"),
        }
        for how, answer in answers.items():
            assert answer.status_code < 500, f"{how} {url} with {junk[:20]!r} answered {answer.status_code}"
    graph, tab = Graph.objects.get(pk=theirs["graph"].pk), Tab.objects.filter(pk=theirs["tab"].pk).first()
    document.normalise(graph.document)
    if tab is not None:   # a route may close the tab; one that is left still loads
        document.normalise(tab.document)
        client.force_login(owner)   # logout/ logged the client out
        assert client.get(f"/editor/{tab.pk}/").status_code == 200
