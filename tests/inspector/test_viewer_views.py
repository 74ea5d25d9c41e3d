"""The full-size viewers' cards and their pages without JavaScript (issue 17, reference §14)."""
from __future__ import annotations

import html
import re

import pytest

from apps.editor.models import Tab
from apps.graphs import document
from apps.runs import service
from apps.runs.models import Run
from apps.runs.store import get_store
from tests.conftest import example

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tab(student):
    return Tab.objects.create(owner=student, title="viewers", document=document.normalise(example("attention-viewers")))


@pytest.fixture
def finished(student_client, tab, student, fresh_store):
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    run = service.wait_for(Run.objects.get(owner=student).pk)
    assert run.status == "succeeded", run.error
    return run


def get(client, url):
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return html.unescape(response.content.decode())


def test_fv1_the_cards_have_their_buttons_and_svg_pictures(student_client, tab, finished):
    """FV1: View full on the attention cards, Open detailed view on the scatter card."""
    body = get(student_client, f"/editor/{tab.pk}/?run={finished.pk}")
    for node in ("mha", "heatmap", "mask"):
        assert re.search(rf'href="/editor/{tab.pk}/viewer/{node}/\?run={finished.pk}"[^>]*>View full<', body)
    assert re.search(rf'href="/editor/{tab.pk}/viewer/scatter/\?run={finished.pk}"[^>]*>Open detailed view<', body)
    assert body.count('<svg class="viewer-heatmap"') == 3 and body.count('<svg class="viewer-scatter"') == 1


def test_fv3_fv4_fv5_the_pages_without_javascript(student_client, tab, finished):
    """FV5, FV3, FV4: the heatmap page's footer; the scatter page's nearest list, filter, zoom."""
    heat = get(student_client, f"/editor/{tab.pk}/viewer/mha/?run={finished.pk}&colormap=RdBu")
    assert "seq_len = 6 · row-normalised colours" in heat and '<option value="RdBu" selected>' in heat
    scatter = get(student_client, f"/editor/{tab.pk}/viewer/scatter/?run={finished.pk}")
    assert "Nearest to view centre" in scatter and 'placeholder="Filter labels…"' in scatter
    assert scatter.count('class="centre-on"') == 40 and "40 points · 100% · 0 hidden" in scatter
    filtered = get(student_client, f"/editor/{tab.pk}/viewer/scatter/?run={finished.pk}&filter=%231&hidden=1,2&zoom=140")
    assert filtered.count('class="centre-on"') == 11 and "40 points · 140% · 2 hidden" in filtered and "Show all" in filtered
    none = get(student_client, f"/editor/{tab.pk}/viewer/scatter/?run={finished.pk}&filter=zzz")
    assert "No labels match" in none


def test_a_hand_edited_viewer_url_never_fails(student_client, tab, finished):
    for query in ("cx=nan&cy=inf&zoom=1e999", "zoom=-1&hidden=x,,9999999999", "colormap=<b>", "cx=" + "9" * 500):
        assert student_client.get(f"/editor/{tab.pk}/viewer/scatter/?run={finished.pk}&{query}").status_code == 200
        assert student_client.get(f"/editor/{tab.pk}/viewer/heatmap/?run={finished.pk}&{query}").status_code == 200
    assert "40 points · 25% · 0 hidden" in get(student_client, f"/editor/{tab.pk}/viewer/scatter/?run={finished.pk}&zoom=1")
    assert "40 points · 50000% · 0 hidden" in get(student_client, f"/editor/{tab.pk}/viewer/scatter/?run={finished.pk}&zoom=1e9")


def test_no_viewer_for_other_nodes_or_strangers(student_client, stranger, tab, finished):
    from django.test import Client
    client = Client()
    assert student_client.get(f"/editor/{tab.pk}/viewer/tokens/?run={finished.pk}").status_code == 404
    assert student_client.get(f"/editor/{tab.pk}/viewer/nope/?run={finished.pk}").status_code == 404
    client.force_login(stranger)
    assert client.get(f"/editor/{tab.pk}/viewer/scatter/?run={finished.pk}").status_code == 404


def test_an_evicted_run_says_so(student_client, tab, finished):
    get_store().drop_run(str(finished.pk))
    assert "Cannot fetch: run is no longer available." in get(student_client, f"/editor/{tab.pk}/viewer/mha/?run={finished.pk}")
    assert "Cannot load: this run is no longer available." in get(
        student_client, f"/editor/{tab.pk}/viewer/scatter/?run={finished.pk}")


def test_plotly_is_served_from_the_installed_package_to_a_student_only(student_client):
    from django.test import Client

    response = student_client.get("/editor/viewer/plotly.min.js")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/javascript")
    assert Client().get("/editor/viewer/plotly.min.js").status_code in (302, 401, 404)


def test_auto_layout_stacks_cards_by_their_real_height_so_picture_cards_overlap_nothing(student_client, tab, finished):
    """FV2: after a run the viewer cards carry tall pictures; Auto layout places every card under
    the one above it by the height the canvas draws (apps.editor.context.card_heights), so no
    two cards overlap."""
    from django.test import RequestFactory

    from apps.editor.canvas import CARD_W, layout
    from apps.editor.context import card_heights

    state = f"run={finished.pk}"
    response = student_client.post(f"/editor/{tab.pk}/layout", {"width": "720", "_state": state})
    assert response.status_code in (200, 302)
    tab.refresh_from_db()
    request = RequestFactory().get("/")
    request.user = finished.owner
    heights = card_heights(request, tab.document, finished)
    assert max(heights.values()) > 200          # the scatter card's picture makes it tall
    cards = layout(tab.document, pictured={}).cards
    boxes = [(c.x, c.y, c.x + CARD_W, c.y + heights[c.id]) for c in cards]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
