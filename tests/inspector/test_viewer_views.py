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
    assert "#0, #1, … are the rows of points_2d in order" in scatter   # its points are unnamed
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


def frame_data(body: str) -> dict:
    import json

    found = re.search(r'<script id="viewer-data" type="application/json">(.*?)</script>', body, re.S)
    assert found, "the frame page carries its numbers as JSON"
    return json.loads(found.group(1))


def test_fv3_fv5_the_frame_pages_carry_the_viewers_numbers_and_load_plotly(student_client, tab, finished):
    """FV5, FV3: the frame page the editor's dialog holds: the heatmap's per-head colours and
    tooltips, its footer; the scatter's points and names; plotly.min.js and the drawing script."""
    heat = student_client.get(f"/editor/{tab.pk}/viewer-frame/mha/?run={finished.pk}")
    assert heat.status_code == 200
    body = heat.content.decode()
    data = frame_data(body)
    assert data["footer"] == "seq_len = 6 · row-normalised colours" and [p["title"] for p in data["panels"]] == ["h0", "h1"]
    assert data["colormap"] == "viridis" and set(data["colormaps"]) == {"viridis", "blues", "RdBu"}
    assert "<br>" in data["panels"][0]["tips"][0][1] and data["panels"][0]["tips"][0][1].startswith("head 0 · w[0, 1] = ")
    assert '<script src="/editor/viewer/plotly.min.js"></script>' in body and "js/viewer-frame.js" in body
    assert frame_data(student_client.get(f"/editor/{tab.pk}/viewer-frame/mask/?run={finished.pk}").content.decode())["footer"] == "seq_len = 6"
    scatter = frame_data(student_client.get(f"/editor/{tab.pk}/viewer-frame/scatter/?run={finished.pk}").content.decode())
    assert len(scatter["x"]) == 40 and scatter["footer"] == "40 points · 100% · 0 hidden" and scatter["nearest"] == 60


def test_only_the_frame_page_relaxes_the_csp_as_plotly_needs(student_client, tab, finished):
    """The editor's own pages keep the strict policy (no 'unsafe-inline', no data: images, not
    framable); the frame page alone lets plotly write style attributes, fill empty <style>
    elements and draw data: images, and may be framed by this site only. No eval anywhere."""
    def policy(response) -> dict[str, str]:
        return {part.split()[0]: part.strip() for part in response["Content-Security-Policy"].split(";") if part.strip()}

    editor = policy(student_client.get(f"/editor/{tab.pk}/?run={finished.pk}"))
    assert "unsafe-inline" not in str(editor) and "data:" not in str(editor) and "style-src-attr" not in editor
    assert editor["frame-ancestors"] == "frame-ancestors 'none'"
    page = policy(student_client.get(f"/editor/{tab.pk}/viewer/mha/?run={finished.pk}"))   # the no-JS page: strict too
    assert "unsafe-inline" not in str(page) and "data:" not in str(page)
    response = student_client.get(f"/editor/{tab.pk}/viewer-frame/mha/?run={finished.pk}")
    frame = policy(response)
    assert frame["style-src-attr"] == "style-src-attr 'unsafe-inline'"
    assert frame["style-src-elem"] == "style-src-elem 'self' 'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
    assert frame["img-src"] == "img-src 'self' data:" and frame["frame-ancestors"] == "frame-ancestors 'self'"
    assert frame["script-src"] == "script-src 'self'" and frame["style-src"] == "style-src 'self'"
    assert "unsafe-eval" not in response["Content-Security-Policy"] and response["X-Frame-Options"] == "SAMEORIGIN"
    assert not re.search(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", response.content.decode())


def test_the_frame_page_is_the_owners_and_says_when_its_run_is_gone(student_client, stranger, tab, finished):
    from django.test import Client

    client = Client()
    client.force_login(stranger)
    assert client.get(f"/editor/{tab.pk}/viewer-frame/scatter/?run={finished.pk}").status_code == 404
    assert student_client.get(f"/editor/{tab.pk}/viewer-frame/tokens/?run={finished.pk}").status_code == 404
    get_store().drop_run(str(finished.pk))
    heat = get(student_client, f"/editor/{tab.pk}/viewer-frame/mha/?run={finished.pk}")
    assert "Cannot fetch: run is no longer available." in heat and "plotly.min.js" not in heat
    assert "Cannot load: this run is no longer available." in get(
        student_client, f"/editor/{tab.pk}/viewer-frame/scatter/?run={finished.pk}")


def test_plotlys_map_style_is_forestalled_on_the_frame_page(student_client, tab, finished):
    """plotly's bundled map library writes a <style> at load unless an element of its id is
    there: the frame page puts one (read from the installed bundle; an upgrade that moves it
    fails here, not as a refusal in a student's browser)."""
    from apps.editor.views.viewers import plotly_map_style_id

    assert re.fullmatch(r"[0-9a-f]{32,64}", plotly_map_style_id())
    assert f'id="{plotly_map_style_id()}"' in get(student_client, f"/editor/{tab.pk}/viewer-frame/mha/?run={finished.pk}")
