"""The welcome screen's lessons, grouped by topic in a fixed order; a lesson's topic is the
top-level "topic" of its example JSON, which documents keep."""
from __future__ import annotations

import json
import re

import pytest

from apps.editor import workspace
from apps.graphs import document
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.django_db


def lesson(slug, topic=None):
    return {"slug": slug, "name": slug.title(), "description": f"About {slug}.", "topic": topic or ""}


def test_topics_come_in_the_lesson_order_and_untopiced_lessons_last():
    groups = workspace.lesson_groups([lesson("a", "Training"), lesson("b"), lesson("c", "Tensors"),
                                      lesson("d", "Not a topic"), lesson("e", "Training")])
    assert [(g["topic"], [x["slug"] for x in g["lessons"]]) for g in groups] == [
        ("Tensors", ["c"]), ("Training", ["a", "e"]), ("More lessons", ["b", "d"])]
    assert workspace.TOPICS == ("Tensors", "CNNs", "Training", "Classical ML", "Text and attention", "Generative",
                                "Reinforcement learning")


def test_every_shipped_lesson_has_a_topic_of_the_list():
    for path in EXAMPLES.glob("*.json"):
        doc = json.loads(path.read_text())
        assert doc.get("topic") in workspace.TOPICS, path.name
        assert doc.get("name") and doc.get("description"), path.name
    topics = {e["slug"]: e["topic"] for e in workspace.examples()}
    assert topics["walkthrough"] == "Tensors" and topics["cnn"] == "CNNs"
    assert {topics[s] for s in ("mlp", "train-digits", "lr-too-high", "vanishing_gradients")} == {"Training"}
    assert topics["attention"] == "Text and attention" and topics["plots-decision-boundary"] == "Classical ML"


def test_a_document_keeps_its_topic_and_refuses_one_that_is_not_text():
    doc = document.normalise({"nodes": [], "edges": [], "topic": "CNNs", "description": "d"})
    assert doc["topic"] == "CNNs" and json.loads(document.dumps(doc))["topic"] == "CNNs"
    assert "topic" not in document.normalise({"nodes": [], "edges": []})
    with pytest.raises(document.DocumentError, match="topic: must be text"):
        document.normalise({"nodes": [], "edges": [], "topic": 3})


def test_the_welcome_screen_lists_lessons_under_their_topics(student_client):
    body = student_client.get("/editor/").content.decode()
    headings = re.findall(r'<h3 id="topic-[\w-]+">([^<]+)</h3>', body)
    shipped = [t for t in workspace.TOPICS if any(e["topic"] == t for e in workspace.examples())]
    assert headings == shipped and headings[:3] == ["Tensors", "CNNs", "Training"]
    section = body[body.index('<h3 id="topic-classical-ml">'):]
    section = section[:section.index("</section>")]
    assert "<strong>Decision boundaries</strong>" in section and "Twenty points in three groups" in section
    assert body.index(">Softmax walkthrough<") < body.index(">Small CNN on a synthetic image<")


def test_the_home_page_groups_them_too(student_client):
    body = student_client.get("/").content.decode()
    assert '<h3 id="topic-tensors">Tensors</h3>' in body
