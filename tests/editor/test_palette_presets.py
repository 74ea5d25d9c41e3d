"""Presets in the sidebar: listed in their category, found by quick search, added as a block."""
from __future__ import annotations

import pytest

from apps.editor.models import Tab
from apps.graphs import document, subgraphs

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tab(student, walkthrough):
    return Tab.objects.create(owner=student, title="walk", document=document.normalise(walkthrough))


def page(client, tab, query=""):
    return client.get(f"/editor/{tab.pk}/{query}").content.decode()


def test_presets_are_listed_in_their_category_with_level_and_size(student_client, tab):
    body = page(student_client, tab)
    cnn = body.split('aria-label="CNN"')[1].split("</details>")[0]
    assert 'aria-label="Add preset Simple CNN Classifier"' in cnn
    assert "Preset · beginner · 6 nodes" in cnn
    assert cnn.index("Add MaxPool2d") < cnn.index("Add preset Simple CNN Classifier")


def test_quick_search_finds_a_preset_by_its_tag(student_client, tab):
    results = page(student_client, tab, "?q=sequence").split('aria-label="Quick search results"')[1]
    assert 'aria-label="Add preset LSTM Sequence"' in results.split("</section>")[0]


def test_adding_a_preset_places_its_block_and_selects_it(student_client, tab):
    response = student_client.post(f"/editor/{tab.pk}/nodes/add", {"type": "preset:LSTM Sequence"})
    assert response.url == f"/editor/{tab.pk}/?node=lstm-sequence-1"
    tab.refresh_from_db()
    block = next(n for n in tab.document["nodes"] if n["id"] == "lstm-sequence-1")
    assert block["type"] == "Subgraph" and block["data"]["label"] == "LSTM Sequence"
    assert [p["name"] for p in subgraphs.definition(block)["outputs"]] == ["output", "hidden"]


def test_a_preset_blocks_panel_edits_the_params_it_exposes(student_client, tab):
    student_client.post(f"/editor/{tab.pk}/nodes/add", {"type": "preset:LSTM Sequence"})
    body = page(student_client, tab, "?node=lstm-sequence-1")
    assert '<label for="param-lstm.hidden_size">Hidden size</label>' in body
    student_client.post(f"/editor/{tab.pk}/nodes/lstm-sequence-1/params", {"lstm.hidden_size": "16"})
    tab.refresh_from_db()
    block = next(n for n in tab.document["nodes"] if n["id"] == "lstm-sequence-1")
    assert subgraphs.definition(block)["nodes"][0]["data"]["params"]["hidden_size"] == 16


def test_the_palette_is_rendered_once_per_distinct_list_and_setting():
    """Every student with the same settings sees the same list: it is rendered once and kept;
    another mode, tooltip setting or set of entries renders its own."""
    from apps.editor import palette
    from apps.editor.context import palette_html

    full, basic = palette.categories("all"), palette.categories("basic")
    first = palette_html(full, tooltips=True)
    assert palette_html(palette.categories("all"), tooltips=True) is first   # a fresh but equal list
    assert 'title="Conv2d: ' in first and 'aria-label="Add Conv2d"' in first
    plain = palette_html(full, tooltips=False)
    assert 'aria-label="Add Conv2d"' in plain and 'title="Conv2d: ' not in plain
    assert len(palette_html(basic, tooltips=True)) < len(first)
    fewer = [(name, entries[1:]) for name, entries in full]
    assert palette_html(fewer, tooltips=True) != first
