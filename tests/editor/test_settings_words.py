"""The Settings popover's words for a student (issue "What a class trips over", item 7)."""
from __future__ import annotations

import pytest

from apps.editor.models import Tab
from apps.graphs import document

pytestmark = pytest.mark.django_db


@pytest.fixture
def tab(student, walkthrough):
    return Tab.objects.create(owner=student, title="Walkthrough", document=document.normalise(walkthrough))


def test_the_codex_row_has_a_plain_reading_beside_it(student_client, tab):
    """SP6 keeps the row's name; a 14-year-old reads what it means beside it."""
    page = student_client.get(f"/editor/{tab.pk}/").content.decode()
    assert "ChatGPT Codex account" in page and "In plain words: the chat node cannot talk to a chat model here." in page
