"""Editor pages stay within 60 KB of JavaScript, gzipped (DESIGN.md: plotly aside, which editor
pages do not load): every script an editor page names is measured, none left out."""
from __future__ import annotations

import gzip
import re

import pytest
from django.contrib.staticfiles import finders

from apps.graphs import document
from apps.editor.models import Tab

pytestmark = pytest.mark.django_db

BUDGET = 60 * 1024


def scripts_of(html: str) -> list[str]:
    return re.findall(r'<script[^>]*\bsrc="/static/([^"?]+)', html)


def gzipped(path: str) -> int:
    found = finders.find(path)
    assert found, f"{path} is not a static file"
    with open(found, "rb") as f:
        return len(gzip.compress(f.read(), compresslevel=9))


def test_editor_pages_load_at_most_60_kb_of_javascript_gzipped(student_client, student, walkthrough):
    tab = Tab.objects.create(owner=student, title="walk", document=document.normalise(walkthrough))
    pages = [f"/editor/{tab.pk}/?node=softmax", f"/editor/{tab.pk}/details/softmax/", "/editor/"]
    for url in pages:
        html = student_client.get(url, follow=True).content.decode()
        scripts = scripts_of(html)
        assert scripts and not [s for s in scripts if "plotly" in s], (url, scripts)
        total = sum(gzipped(s) for s in scripts)
        assert total <= BUDGET, f"{url} loads {total} bytes of gzipped JavaScript: {scripts}"
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>\s*\S", html), f"{url}: an inline script escapes the measure"
