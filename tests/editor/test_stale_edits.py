"""Two windows on one tab: every edit form carries the revision it was made from; an edit
from an older revision merges when it touches something else, and is refused, changing
nothing, when its node was deleted or the same field was changed since."""
from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from django.urls import resolve

from apps.editor.models import STALE_EDIT, Tab
from apps.graphs import changes, document, edits

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tab(student, walkthrough):
    return Tab.objects.create(owner=student, title="walk", document=document.normalise(walkthrough))


def post(client, tab, path, revision, data=None):
    """A form post from a window that loaded the page at ``revision``; the page it lands on."""
    body = client.post(f"/editor/{tab.pk}/{path}", {**(data or {}), "_revision": str(revision)}, follow=True)
    tab.refresh_from_db()
    return body.content.decode()


def node(tab, node_id):
    return next(n for n in tab.document["nodes"] if n["id"] == node_id)


STALE_HTML = STALE_EDIT.replace("'", "&#x27;")


class EditForms(HTMLParser):
    """Every POST form on a page: its action and the names of its inputs."""

    def __init__(self):
        super().__init__()
        self.forms: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form" and (attrs.get("method") or "").lower() == "post":
            self.forms.append((attrs.get("action", ""), {}))
        elif tag == "input" and self.forms and attrs.get("name"):
            self.forms[-1][1][attrs["name"]] = attrs.get("value") or ""

    def handle_endtag(self, tag):
        pass


NOT_DOCUMENT_EDITS = {"tab-rename", "tab-close"}  # the tab's title, closing it: no revision needed


def edit_forms(client, path):
    parser = EditForms()
    parser.feed(client.get(path).content.decode())
    return [(resolve(urlsplit(action).path).url_name, fields) for action, fields in parser.forms
            if action.startswith("/editor/") and resolve(urlsplit(action).path).kwargs.get("tab_id")
            and resolve(urlsplit(action).path).url_name not in NOT_DOCUMENT_EDITS]


def test_every_edit_form_on_the_editor_page_carries_the_revision(student_client, tab):
    post(student_client, tab, "nodes/reshape/move", 0, {"x": "200", "y": "40"})
    assert tab.revision == 1
    seen = set()
    for query in ("", "?node=input", "?node=reshape", "?node=start", "details/input/"):
        forms = edit_forms(student_client, f"/editor/{tab.pk}/{query}")
        assert forms
        for name, fields in forms:
            assert fields.get("_revision") == "1", name
            seen.add(name)
    assert {"node-params", "node-grid", "node-rename", "nodes-delete", "connect", "undo", "layout",
            "node-add", "tab-settings", "segment-create"} <= seen
    assert 'data-revision="1"' in student_client.get(f"/editor/{tab.pk}/").content.decode()  # the script's posts


def test_every_edit_bumps_the_revision_and_undo_too(student_client, tab):
    post(student_client, tab, "nodes/softmax/params", 0, {"dim": "1"})
    post(student_client, tab, "nodes/reshape/rename", 1, {"label": "Flatten"})
    post(student_client, tab, "undo", 2)
    assert tab.revision == 3 and "label" not in node(tab, "reshape")["data"]


def test_a_stale_params_form_of_a_changed_node_is_refused(student_client, tab):
    post(student_client, tab, "nodes/softmax/params", 0, {"dim": "1"})            # window A
    body = post(student_client, tab, "nodes/softmax/params", 0, {"dim": "0"})     # window B, loaded before
    assert STALE_HTML in body
    assert node(tab, "softmax")["data"]["params"]["dim"] == 1 and tab.revision == 1


def test_a_stale_params_form_merges_with_a_move_of_the_same_node(student_client, tab):
    post(student_client, tab, "nodes/softmax/move", 0, {"x": "480", "y": "96"})
    body = post(student_client, tab, "nodes/softmax/params", 0, {"dim": "0"})
    assert STALE_HTML not in body
    assert node(tab, "softmax")["data"]["params"]["dim"] == 0 and node(tab, "softmax")["position"]["x"] == 480


def test_a_stale_values_grid_is_refused_after_the_grid_changed(student_client, tab):
    post(student_client, tab, "nodes/input/grid", 0, {"fill": "1"})
    body = post(student_client, tab, "nodes/input/grid", 0, {"cell": ["2"] * 16})
    assert STALE_HTML in body
    assert edits.flat_values(node(tab, "input")["data"]["params"]["values"]) == [1.0] * 16 and tab.revision == 1


def test_a_stale_values_grid_merges_with_an_edit_of_another_node(student_client, tab):
    post(student_client, tab, "nodes/softmax/params", 0, {"dim": "1"})
    body = post(student_client, tab, "nodes/input/grid", 0, {"fill": "0"})
    assert STALE_HTML not in body
    assert node(tab, "input")["data"]["params"]["values"][0][0] == [0.0] * 4
    assert node(tab, "softmax")["data"]["params"]["dim"] == 1 and tab.revision == 2


def test_a_stale_move_of_a_moved_node_is_refused(student_client, tab):
    post(student_client, tab, "nodes/print/move", 0, {"x": "720", "y": "48"})
    body = post(student_client, tab, "nodes/print/move", 0, {"x": "24", "y": "24"})
    assert STALE_HTML in body and node(tab, "print")["position"] == {"x": 720.0, "y": 48.0}


def test_stale_moves_of_different_nodes_both_land(student_client, tab):
    post(student_client, tab, "nodes/print/move", 0, {"x": "720", "y": "48"})
    body = post(student_client, tab, "nodes/reshape/move", 0, {"x": "240", "y": "48"})
    assert STALE_HTML not in body
    assert node(tab, "print")["position"]["x"] == 720 and node(tab, "reshape")["position"]["x"] == 240


def test_an_edit_of_a_node_deleted_in_another_window_is_refused(student_client, tab):
    post(student_client, tab, "nodes/delete", 0, {"node": "softmax"})
    for path, data in (("nodes/softmax/params", {"dim": "0"}), ("nodes/softmax/move", {"x": "1", "y": "1"}),
                       ("nodes/delete", {"node": "softmax"}), ("nodes/softmax/rename", {"label": "Probs"})):
        assert STALE_HTML in post(student_client, tab, path, 0, data), path
    assert tab.revision == 1 and "softmax" not in {n["id"] for n in tab.document["nodes"]}


def test_a_stale_delete_of_a_node_changed_since_is_refused(student_client, tab):
    post(student_client, tab, "nodes/softmax/params", 0, {"dim": "1"})
    assert STALE_HTML in post(student_client, tab, "nodes/delete", 0, {"node": "softmax"})
    assert node(tab, "softmax")["data"]["params"]["dim"] == 1


def test_a_stale_undo_is_refused_and_a_current_one_works(student_client, tab):
    post(student_client, tab, "nodes/softmax/params", 0, {"dim": "1"})
    post(student_client, tab, "nodes/print/move", 1, {"x": "720", "y": "48"})
    assert STALE_HTML in post(student_client, tab, "undo", 1)  # would undo the move it never saw
    assert node(tab, "print")["position"]["x"] == 720
    post(student_client, tab, "undo", 2)
    assert node(tab, "print")["position"]["x"] != 720 and tab.revision == 3


def test_a_form_from_before_the_kept_log_is_refused(student_client, tab):
    for i in range(Tab.EDIT_LOG_STEPS + 1):
        post(student_client, tab, "nodes/print/move", i, {"x": str(24 * (i % 2 + 1)), "y": "24"})
    assert STALE_HTML in post(student_client, tab, "nodes/softmax/params", 0, {"dim": "1"})
    assert STALE_HTML in post(student_client, tab, "nodes/softmax/params", tab.revision + 5, {"dim": "1"})


def test_a_revision_that_is_not_a_number_is_not_checked(student_client, tab):
    for junk in ("²", "-1", "abc", ""):
        post(student_client, tab, "nodes/softmax/params", junk, {"dim": "1"})
    assert node(tab, "softmax")["data"]["params"]["dim"] == 1 and tab.revision == 1


def test_the_changed_paths_name_each_field():
    old = {"nodes": [{"id": "a", "type": "T", "position": {"x": 0}, "data": {"params": {"p": 1, "q": 2}}},
                     {"id": "b", "type": "T", "position": {"x": 0}, "data": {}}],
           "edges": [], "segmentGroups": [], "settings": {"seed": ""}}
    new = {"nodes": [{"id": "a", "type": "T", "position": {"x": 5}, "data": {"params": {"p": 1, "q": 3}, "label": "A"}}],
           "edges": [{"id": "e1", "source": "a", "target": "c", "targetHandle": "x"}], "segmentGroups": [],
           "settings": {"seed": "7"}}
    assert sorted(changes.changed_paths(old, new)) == sorted([
        ["node", "a", "position"], ["node", "a", "label"], ["node", "a", "params", "q"], ["node", "b"],
        ["edge", "e1"], ["input", "c", "x"], ["settings", "seed"]])
    assert changes.clash([["node", "b"]], [["node", "b", "position"]])
    assert changes.clash([["node", "a", "params", "q"]], [["node", "a"]])
    assert not changes.clash([["node", "a", "position"]], [["node", "a", "params", "q"], ["node", "ab"]])
    assert changes.clash([[]], [["settings", "seed"]])
