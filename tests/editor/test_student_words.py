"""Words for a student (issue "What a class trips over", item 7): parameters read as words, a
pack's nodes without their namespace."""
from __future__ import annotations

import pytest

from apps.editor.models import Tab
from apps.graphs import document

pytestmark = pytest.mark.django_db


def test_a_parameter_reads_as_words_and_keeps_its_key_on_hover(student_client, student, walkthrough):
    """Words a 14-year-old reads: "Value mode", with value_mode (the file's key) on hover."""
    tab = Tab.objects.create(owner=student, title="Walkthrough", document=document.normalise(walkthrough))
    node = next(n["id"] for n in tab.document["nodes"] if n["type"] == "TensorInput")
    page = student_client.get(f"/editor/{tab.pk}/?node={node}&view=node").content.decode()
    assert f'<label for="param-value_mode" title="value_mode">Value mode</label>' in page


def test_the_sidebar_names_a_packs_node_without_its_namespace(student_client, student):
    tab = Tab.objects.create(owner=student, title="Blank")
    page = student_client.get(f"/editor/{tab.pk}/").content.decode()
    assert 'aria-label="Add KNN"' in page and ">edu:" not in page
