"""The Content-Security-Policy allows nothing inline: every page is checked for a style
attribute, a <style> or inline <script>, an on… handler or a javascript: link, and draws
its colours and positions with the generated stylesheet instead. (The browser tests fail
on any refusal the policy reports: tests/e2e/conftest.py.)"""
from __future__ import annotations

from html.parser import HTMLParser

import pytest
import torch

from apps.editor.models import Tab
from apps.editor.templatetags.placement import place
from apps.graphs import document
from apps.runs.models import Run

pytestmark = pytest.mark.django_db


class InlineFinder(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        names = dict(attrs)
        for name, value in attrs:
            if name == "style" or name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")
        if tag == "style":
            self.found.append("<style>")
        self._in_script = tag == "script" and "src" not in names and names.get("type") != "application/json"

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.found.append(f"<script>{data[:60]}")

    def handle_endtag(self, tag):
        self._in_script = False


def inline_parts(html: str) -> list[str]:
    finder = InlineFinder()
    finder.feed(html)
    return finder.found


def test_the_policy_allows_nothing_inline_and_no_eval(client):
    policy = client.get("/login/")["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == directives["script-src"] == directives["style-src"] == "'self'"
    assert directives["object-src"] == directives["base-uri"] == directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in policy and "nonce" not in policy


@pytest.fixture
def rich_tab(student, walkthrough, fresh_store):
    """A tab with a segment, a note, a node at a negative position and an inspected run with captures."""
    walkthrough["segmentGroups"] = [{"id": "seg-reshape-softmax", "headNodeId": "reshape", "tailNodeId": "softmax"}]
    walkthrough["nodes"].append({"id": "memo", "type": "note", "position": {"x": -40, "y": 10}, "data": {"text": "hi"}})
    doc = document.normalise(walkthrough)
    run = Run.objects.create(owner=student, status=Run.Status.RUNNING, options={"record": True},
                             nodes={"input": {"status": "completed"}, "reshape": {"status": "running"}})
    fresh_store.open_run(str(run.pk))
    fresh_store.put(str(run.pk), "input", "tensor", torch.arange(16.0).reshape(1, 4, 4))
    tab = Tab.objects.create(owner=student, title="walk", document=doc, last_run=run,
                             active_segment="seg-reshape-softmax")
    return tab, run


def test_no_page_has_anything_inline(student_client, client, stranger, rich_tab):
    tab, run = rich_tab
    edge = tab.document["edges"][-1]["id"]
    pages = {
        "editor": f"/editor/{tab.pk}/?node=softmax&run={run.pk}",
        "editor, Inspector on a tensor": f"/editor/{tab.pk}/?node=reshape&run={run.pk}",
        "node details": f"/editor/{tab.pk}/details/input/?run={run.pk}",
        "edge summary": f"/editor/{tab.pk}/edges/{edge}/?run={run.pk}",
        "home": "/", "not found": "/editor/999999/",
    }
    for what, url in pages.items():
        answer = student_client.get(url)
        assert answer.status_code in (200, 404), what
        assert inline_parts(answer.content.decode()) == [], what
    assert inline_parts(client.get("/login/").content.decode()) == []
    assert inline_parts(student_client.get(f"/editor/{tab.pk}/?node=softmax", headers={"HX-Request": "true"})
                        .content.decode()) == []  # the htmx partial too
    client.force_login(stranger)
    welcome = client.get("/editor/").content.decode()
    assert "Open a saved graph" in welcome and inline_parts(welcome) == []


def test_the_admin_has_nothing_inline(admin_client, student):
    for url in ("/admin/", "/admin/auth/user/", f"/admin/auth/user/{student.pk}/change/",
                "/admin/axes/accessattempt/", "/admin/graphs/graph/", "/admin/runs/run/"):
        answer = admin_client.get(url)
        assert answer.status_code == 200 and inline_parts(answer.content.decode()) == [], url


def test_positions_are_classes_the_stylesheet_adds_up():
    assert place(x=264, y=-22.4) == "at-x x0-4 x1-6 x2-2 at-y y-neg y0-2 y1-2"
    assert place(w=0) == "at-w"
    assert place(x=5_000_000) == "at-x " + " ".join(f"x{i}-9" for i in range(6))  # past the canvas: its edge


def test_the_generated_stylesheet_colours_ports_and_categories_and_places(student_client):
    css = student_client.get("/editor/palette.css")
    assert css["Content-Type"] == "text/css"
    text = css.content.decode()
    assert '[data-type="TENSOR" i] { --port: #4CAF50; }' in text
    assert '[data-category="cnn"] { --cat: #4CAF50; }' in text
    assert ".x2-6 { --x2: 6; }" in text and ".y-neg { --y-sign: -1; }" in text
    assert (".at-x { left: calc(var(--x-sign) * (var(--x0) * 1px + var(--x1) * 10px + var(--x2) * 100px"
            " + var(--x3) * 1000px + var(--x4) * 10000px + var(--x5) * 100000px)); }") in text
