"""The Settings popover's LLM Providers row: the offline words unless an administrator set an endpoint."""
from __future__ import annotations

import pytest

from apps.editor.models import Tab
from codefyui import conf


@pytest.fixture
def tab(student, walkthrough):
    from apps.graphs import document
    return Tab.objects.create(owner=student, title="walk", document=document.normalise(walkthrough))


def test_the_llm_row_names_a_configured_endpoint(student_client, tab, monkeypatch):
    offline = student_client.get(f"/editor/{tab.pk}/").content.decode()
    assert "No LLM provider is configured on this server (it runs offline)" in offline
    monkeypatch.setattr(conf, "LLM_BASE_URL", "http://llm.school.lan:8000/v1")
    monkeypatch.setattr(conf, "LLM_MODEL", "tiny-chat")
    body = student_client.get(f"/editor/{tab.pk}/").content.decode()
    assert "No LLM provider is configured" not in body
    assert "LLMChat uses the model tiny-chat at http://llm.school.lan:8000/v1" in body
