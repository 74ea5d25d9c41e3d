"""Settings switches (issue "What a class trips over", item 5): a switch applies when flipped
(htmx posts its form on change), says what changed, and Settings stays open; without
JavaScript the same form has its Apply button."""
from __future__ import annotations

import pytest

from apps.editor.models import Tab
from apps.graphs import document

pytestmark = pytest.mark.django_db


@pytest.fixture
def tab(student, walkthrough):
    return Tab.objects.create(owner=student, title="Walkthrough", document=document.normalise(walkthrough))


def test_flipping_a_switch_saves_it_says_so_and_keeps_settings_open(student_client, tab):
    answer = student_client.post(f"/editor/{tab.pk}/settings", {"_keys": "record_outputs,verbose_internals",
                                                                 "verbose_internals": "on", "record_outputs": "on"})
    assert "settings=1" in answer.url
    page = student_client.get(answer.url).content.decode()
    assert "Saved with this graph: Verbose internals on." in page
    assert '<details class="popover settings" id="settings-popover" aria-label="Settings" open>' in page
    tab.refresh_from_db()
    assert document.run_settings(tab.document)["verbose_internals"] is True


def test_the_switch_forms_post_on_change_and_keep_an_apply_button_for_no_javascript(student_client, tab):
    page = student_client.get(f"/editor/{tab.pk}/").content.decode()
    assert page.count('hx-trigger="change, submit" class="apply-on-change"') == 2
    form = page.split('class="apply-on-change"', 1)[1].split("</form>", 1)[0]
    assert '<button type="submit">Apply</button>' in form


def test_the_codex_row_has_a_plain_reading_beside_it(student_client, tab):
    """SP6 keeps the row's name; a 14-year-old reads what it means beside it."""
    page = student_client.get(f"/editor/{tab.pk}/").content.decode()
    assert "ChatGPT Codex account" in page and "In plain words: the chat node cannot talk to a chat model here." in page
