"""The editor's views: every edit works as a plain form post, one undo step each, owners only."""
from __future__ import annotations

import json
import re

import pytest

from apps.editor import palette
from apps.editor.models import HistoryStep, Tab
from apps.editor.prefs import COOKIE
from apps.graphs import presets
from apps.graphs.models import Graph
from apps.runs import service
from apps.runs.models import Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tab(student, walkthrough):
    from apps.graphs import document
    return Tab.objects.create(owner=student, title="walk", document=document.normalise(walkthrough))


def url(tab, path=""):
    return f"/editor/{tab.pk}/{path}"


def page(client, tab, query=""):
    return client.get(url(tab) + query).content.decode()


def test_the_welcome_screen_shows_while_no_tab_is_open(student_client):
    body = student_client.get("/editor/").content.decode()
    for text in ("New blank graph", "Open a saved graph", "Import…", "Softmax walkthrough", "Small MLP",
                 "Small CNN on a synthetic image", "Self-attention", "RNN over a short sequence"):
        assert text in body
    assert "Recording &amp; Inspection" not in body and "Training Behavior" not in body


def test_an_example_opens_in_a_new_tab_ready_to_run(student_client, student):
    response = student_client.post("/editor/tabs/example", {"example": "walkthrough"})
    tab = Tab.objects.get(owner=student)
    assert response.status_code == 302 and response.url == url(tab)
    assert tab.title == "Softmax walkthrough" and len(tab.document["nodes"]) == 5


def test_a_stranger_cannot_see_or_edit_my_tab(client, stranger, tab):
    client.force_login(stranger)
    assert client.get(url(tab)).status_code == 404
    assert client.post(url(tab, "nodes/add"), {"type": "Softmax"}).status_code == 404
    assert client.post(url(tab, "undo")).status_code == 404


def test_adding_a_node_selects_it_and_is_one_undo_step(student_client, tab):
    response = student_client.post(url(tab, "nodes/add"), {"type": "Softmax", "x": "300", "y": "300"})
    assert response.url == url(tab) + "?node=softmax-1"
    tab.refresh_from_db()
    assert len(tab.document["nodes"]) == 6 and tab.history.count() == 1
    student_client.post(url(tab, "undo"))
    tab.refresh_from_db()
    assert len(tab.document["nodes"]) == 5
    student_client.post(url(tab, "redo"))
    tab.refresh_from_db()
    assert len(tab.document["nodes"]) == 6


def test_undo_after_a_delete_brings_the_node_and_its_edges_back(student_client, tab):
    student_client.post(url(tab, "nodes/delete"), {"node": "softmax"})
    tab.refresh_from_db()
    assert "softmax" not in {n["id"] for n in tab.document["nodes"]} and len(tab.document["edges"]) == 2
    student_client.post(url(tab, "undo"))
    tab.refresh_from_db()
    assert "softmax" in {n["id"] for n in tab.document["nodes"]} and len(tab.document["edges"]) == 4


def test_undo_keeps_at_least_50_steps(student_client, tab):
    for i in range(55):
        student_client.post(url(tab, "nodes/reshape/move"), {"x": str(i * 10), "y": "0"})
    tab.refresh_from_db()
    assert tab.history.filter(kind=HistoryStep.UNDO).count() == 50


def test_a_bad_param_says_why_and_saves_nothing(student_client, tab):
    body = student_client.post(url(tab, "nodes/input/params"), {"seed": "soon", "_node": "input"}, follow=True).content.decode()
    assert "&#x27;seed&#x27; must be a number" in body
    tab.refresh_from_db()
    assert "seed" not in tab.document["nodes"][1]["data"]["params"] and not tab.can(HistoryStep.UNDO)


def test_an_unchecked_bool_param_turns_off(student_client, tab):
    student_client.post(url(tab, "nodes/add"), {"type": "Mean"})
    student_client.post(url(tab, "nodes/mean-1/params"), {"keepdim": "true", "_bools": "keepdim"})
    student_client.post(url(tab, "nodes/mean-1/params"), {"_bools": "keepdim"})
    tab.refresh_from_db()
    assert tab.document["nodes"][-1]["data"]["params"]["keepdim"] is False


def test_the_input_select_wires_without_javascript(student_client, tab):
    student_client.post(url(tab, "connect"), {"source": "input::tensor", "target": "softmax", "target_port": "tensor"})
    tab.refresh_from_db()
    assert ("input", "softmax") in {(e["source"], e["target"]) for e in tab.document["edges"]}
    student_client.post(url(tab, "connect"), {"source": "", "target": "softmax", "target_port": "tensor"})
    tab.refresh_from_db()
    assert not any(e["target"] == "softmax" for e in tab.document["edges"])


def test_the_node_panel_offers_only_compatible_sources(student_client, tab):
    body = page(student_client, tab, "?node=softmax")
    assert '<option value="reshape::tensor" selected>Reshape.tensor</option>' in body
    assert "softmax::tensor" not in body  # not itself


def test_the_grid_shows_16_cells_for_the_walkthrough(student_client, tab):
    body = page(student_client, tab, "?node=input")
    assert body.count('name="cell"') == 16 and "Fill 0" in body and "Random" in body


def test_run_then_the_page_shows_every_node_completed(student_client, tab, student):
    response = student_client.post(url(tab, "run"), {"device": "follow"})
    run = Run.objects.get(owner=student)
    assert response.url == url(tab) + f"?run={run.pk}"
    service.wait_for(run.pk)
    body = page(student_client, tab, f"?run={run.pk}")
    assert body.count(">Completed</span>") == 5
    assert "[probabilities]" in body and "Run succeeded on cpu" in body


def test_a_running_page_refreshes_itself_without_javascript(student_client, tab, student):
    """Issue 49 item 2: each refresh loads the page again (a new refresh value) and puts the
    Inspector column at what changes while the run goes (#watching), not back at its top."""
    run = Run.objects.create(owner=student, status=Run.Status.RUNNING)
    body = page(student_client, tab, f"?run={run.pk}&node=softmax")
    refresh = re.search(r'<noscript><meta http-equiv="refresh" content="1; url=([^"]+)"></noscript>', body)
    assert refresh and refresh.group(1).startswith(f"/editor/{tab.pk}/?run={run.pk}&amp;node=softmax&amp;refresh=")
    assert refresh.group(1).endswith("#watching") and '<section aria-label="Outputs" id="watching">' in body
    assert f'ws-connect="/ws/runs/{run.pk}/"' in body


def test_a_draft_is_refused_with_the_seeds_text(student_client, tab):
    """WK5: without a Start trigger the graph is a draft and Run is rejected."""
    student_client.post(url(tab, "nodes/delete"), {"node": "start"})
    body = student_client.post(url(tab, "run"), follow=True).content.decode()
    assert "No entry points defined. Add a Start node from the palette (drag it onto the canvas or press its button)" in body
    assert not Run.objects.exists()


def test_after_a_reload_the_page_inspects_no_run(student_client, tab, student):
    """IN7: a reload starts without a run: the tab's run lives in the page, not the URL it reloads."""
    run = Run.objects.create(owner=student, status=Run.Status.SUCCEEDED)
    tab.last_run = run
    tab.save()
    assert "Run succeeded" not in page(student_client, tab)


def test_a_strangers_run_id_in_the_url_is_ignored(client, stranger, student, tab):
    run = Run.objects.create(owner=student, status=Run.Status.SUCCEEDED, graph_name="secret")
    theirs = Tab.objects.create(owner=stranger, title="t")
    client.force_login(stranger)
    body = client.get(f"/editor/{theirs.pk}/?run={run.pk}").content.decode()
    assert "Run succeeded" not in body and "secret" not in body


def test_tab_settings_are_saved_with_the_graph(student_client, tab):
    """SP1, SP4, SP8, SP14: tab rows are saved with it; Auto-synthesize loss needs Capture gradients."""
    student_client.post(url(tab, "settings"), {"_keys": "record_outputs,verbose_internals", "verbose_internals": "on"})
    student_client.post(url(tab, "settings"), {"_keys": "capture_gradients,auto_synthesize_loss",
                                               "auto_synthesize_loss": "on", "seed": "9"})
    tab.refresh_from_db()
    settings = tab.document["settings"]
    assert settings["record_outputs"] is False and settings["verbose_internals"] is True
    assert settings["auto_synthesize_loss"] is False and settings["seed"] == 9


@pytest.mark.parametrize("junk", ["nan", "inf", "-inf", "1e309", "9" * 5000, "abc"])
def test_a_node_placed_at_a_junk_point_lands_on_the_canvas(student_client, tab, junk):
    """A hand-made form can post any text for x and y: the node still lands at a finite point."""
    student_client.post(url(tab, "nodes/add"), {"type": "Softmax", "x": junk, "y": junk})
    student_client.post(url(tab, "nodes/input/move"), {"x": junk, "y": "1e300"})
    tab.refresh_from_db()
    positions = [n["position"] for n in tab.document["nodes"] if n["id"] in ("softmax-1", "input")]
    assert len(positions) == 2 and all(0 <= p[axis] <= 100_000 for p in positions for axis in "xy")
    assert page(student_client, tab).count('class="card') >= 6


@pytest.mark.parametrize("seed", ["9" * 5000, "²"])
def test_a_seed_no_one_could_mean_is_refused(student_client, tab, seed):
    body = student_client.post(url(tab, "settings"), {"seed": seed}, follow=True).content.decode()
    assert "settings.seed: must be a whole number or blank" in body


def test_a_bad_seed_is_refused(student_client, tab):
    body = student_client.post(url(tab, "settings"), {"seed": "soon"}, follow=True).content.decode()
    assert "settings.seed: must be a whole number or blank" in body


def test_record_node_outputs_is_on_by_default(student_client, student):
    """WK6, SP8: Record node outputs is on by default under Settings → Recording & Inspection."""
    student_client.post("/editor/tabs/new")
    body = page(student_client, Tab.objects.get(owner=student))
    assert '<input type="checkbox" name="record_outputs" checked> Record node outputs' in body
    assert body.index("Recording &amp; Inspection") < body.index("Compare segment") < body.index("Training Behavior")


def test_browser_prefs_live_in_a_cookie_and_grid_snap_snaps_existing_nodes(student_client, tab):
    """SP2, SP17: Editor rows are kept by this browser; turning Grid snap on snaps what is on the canvas."""
    student_client.post(url(tab, "nodes/reshape/move"), {"x": "101", "y": "37"})
    response = student_client.post("/editor/prefs", {"grid_snap": "true", "tooltips": "false",
                                                     "connection_style": "curve", "_tab": tab.pk})
    assert '"grid_snap": true' in response.cookies[COOKIE].value
    tab.refresh_from_db()
    assert tab.document["nodes"][2]["position"] == {"x": 96.0, "y": 48.0}
    assert ' C' in page(student_client, tab)  # Curve edges are cubic paths


def test_basic_mode_lists_only_four_categories_but_quick_search_finds_everything(student_client, tab):
    """SP19: Basic lists only Data, CNN, Training and IO; quick search is not filtered."""
    student_client.post("/editor/prefs", {"category_mode": "basic"})
    body = page(student_client, tab, "?q=resh")
    assert "Tensor Operations" not in body and 'aria-label="Add Reshape"' in body


def test_quick_search_lists_start_first_and_at_most_20(student_client, tab):
    body = page(student_client, tab, "?q=")
    results = body.split('aria-label="Quick search results"')[1].split("</section>")[0]
    assert results.count("palette-item") == 20
    assert results.index("Add Start") < results.index("Add Add")


def test_an_unavailable_device_falls_back_to_cpu_and_says_so(student_client, tab):
    """SP5: a device this server lacks is shown as such and runs fall back."""
    student_client.cookies[COOKIE] = '{"device": "cuda"}'
    body = page(student_client, tab)
    assert "cuda (not on this server)" in body and "No cuda on this server. Runs fall back to CPU." in body
    assert "Follow Settings (cuda → CPU)" in body


def test_this_server_shows_version_counts_and_store_usage(student_client, tab):
    """SP21: This Server shows the version, node and preset counts, and each store's usage, with Refresh."""
    body = page(student_client, tab)
    counts = f"{len(palette.catalogue())} nodes · {len(presets.available())} presets"
    assert counts in body and "Recorded outputs: 0 of 20 runs" in body and ">Refresh</a>" in body
    assert "Execution cache: 0 results of 0 users, 0\xa0bytes of 1.0\xa0GB" in body
    assert "Runs: 0 computing, 0 paused for others, 0 queued; run in the server process" in body


@pytest.mark.parametrize("workers, line", [(6, "Runs: 4 computing, 1 paused for others, 2 queued; 6 run workers (1 idle)"),
                                           (1, "Runs: 4 computing, 1 paused for others, 2 queued; 1 run worker (1 idle)")])
def test_this_server_shows_how_busy_the_run_workers_are(student_client, tab, monkeypatch, workers, line):
    """A teacher sees why a run waits or reads "Paused for others…": the class's long runs fill the workers."""
    from apps.runs import service
    monkeypatch.setattr(service, "worker_usage", lambda: {"workers": workers, "spares": 2, "idle": 1, "computing": 4,
                                                          "paused": 1, "queued": 2})
    assert line in page(student_client, tab)


def test_closing_a_running_tab_asks_first(student_client, tab, student):
    tab.last_run = Run.objects.create(owner=student, status=Run.Status.RUNNING)
    tab.save()
    body = student_client.post(url(tab, "close"), follow=True).content.decode()
    assert "This tab is still running. Close it anyway?" in body and Tab.objects.filter(pk=tab.pk).exists()
    student_client.post(url(tab, "close"), {"confirm": "yes"})
    assert not Tab.objects.filter(pk=tab.pk).exists() and Run.objects.filter(owner=student).exists()


def test_workspace_export_then_import_brings_back_tabs_and_settings(student_client, student, tab):
    tab.document["settings"]["seed"] = 11
    tab.save()
    exported = student_client.get("/editor/workspace/export")
    assert exported["Content-Disposition"].endswith('.cduiworkspace"')
    from django.core.files.uploadedfile import SimpleUploadedFile
    student_client.post("/editor/tabs/import", {"file": SimpleUploadedFile("w.cduiworkspace", exported.content)})
    tabs = list(Tab.objects.filter(owner=student))
    assert len(tabs) == 2 and tabs[1].document["settings"]["seed"] == 11
    assert set(json.loads(exported.content)["tabs"][0]) == {"title", "graph"}  # never run results or weights


def test_importing_a_broken_file_says_why(student_client):
    from django.core.files.uploadedfile import SimpleUploadedFile
    body = student_client.post("/editor/tabs/import", {"file": SimpleUploadedFile("x.json", b"{oops")}, follow=True).content.decode()
    assert "x.json could not be imported: Invalid JSON at line 1" in body



@pytest.mark.parametrize("back, lands", [("/editor/5/?node=a", "/editor/5/?node=a"),
                                         ("https://elsewhere.example/phish", "/editor/"),
                                         ("//elsewhere.example/", "/editor/"), ("editor:tab", "/editor/")])
def test_a_refused_import_goes_back_only_to_a_page_of_this_site(student_client, back, lands):
    response = student_client.post("/editor/tabs/import", {"_back": back})
    assert response.status_code == 302 and response.url == lands


def test_save_stores_the_tab_as_a_graph(student_client, student, tab):
    student_client.post(url(tab, "save"))
    assert Graph.objects.get(owner=student).name == "Softmax walkthrough"


def test_runs_panel_filters_and_deletes(student_client, student, tab):
    done = Run.objects.create(owner=student, status=Run.Status.FAILED)
    Run.objects.create(owner=student, status=Run.Status.SUCCEEDED)
    body = page(student_client, tab, "?runs=failed")
    assert body.count('class="status-failed"') == 1 and "status-succeeded" not in body
    student_client.post(f"/editor/runs/{done.pk}/delete", {"_tab": tab.pk})
    assert not Run.objects.filter(pk=done.pk).exists()


def test_an_htmx_re_render_fetches_the_closed_runs_panels_rows_when_it_opens(student_client, student, stranger, tab):
    """Every action re-renders the editor under htmx: its closed Runs panel comes without its
    rows (a class's students have tens of runs each), and fetches them when opened, with
    forms that carry the page's state. A page load, or a chosen filter, has them at once."""
    mine = Run.objects.create(owner=student, status=Run.Status.SUCCEEDED)
    Run.objects.create(owner=stranger, status=Run.Status.SUCCEEDED)
    htmx = student_client.get(url(tab) + f"?run={mine.pk}", HTTP_HX_REQUEST="true").content.decode()
    assert "Loading the runs…" in htmx and f"/editor/runs/{mine.pk}/open" not in htmx
    fetch = re.search(r'id="runs-body" hx-get="([^"]+)"', htmx)[1]
    assert fetch == f"/editor/{tab.pk}/runs?run={mine.pk}"
    rows = student_client.get(fetch.replace("&amp;", "&"), HTTP_HX_REQUEST="true").content.decode()
    assert rows.startswith('<div id="runs-body">') and rows.count("<tr>") == 2   # the header, and mine only
    assert f'action="/editor/runs/{mine.pk}/open"' in rows and f'name="_state" value="run={mine.pk}"' in rows
    assert f'name="_tab" value="{tab.pk}"' in rows
    for full in (page(student_client, tab),
                 student_client.get(url(tab) + "?runs=succeeded", HTTP_HX_REQUEST="true").content.decode()):
        assert f"/editor/runs/{mine.pk}/open" in full and "Loading the runs…" not in full
    assert student_client.get(f"/editor/{tab.pk + 1000}/runs").status_code == 404


def test_runs_panel_says_a_short_runs_duration_in_milliseconds(student_client, student, tab):
    """A 7 ms run read "0.00 s"."""
    from datetime import timedelta

    from django.utils import timezone

    from apps.editor.templatetags.durations import duration
    assert [duration(s).replace("\u00a0", " ") for s in (None, 0.0004, 0.007, 0.4567, 0.9996, 2.345)] == [
        "—", "under 1 ms", "7 ms", "457 ms", "1.00 s", "2.35 s"]
    start = timezone.now()
    Run.objects.create(owner=student, status=Run.Status.SUCCEEDED, started=start,
                       finished=start + timedelta(milliseconds=7))
    assert "<td>7\u00a0ms</td>" in page(student_client, tab, "?runs=succeeded")
    assert "<td>7\u00a0ms</td>" in student_client.get("/").content.decode()


def test_reset_all_weights_asks_first_then_drops_the_tabs_layers(student_client, tab):
    """SP12: Reset asks first, then drops every cached weight for this tab."""
    from apps.runs.engine import WEIGHTS
    WEIGHTS.get_or_build(f"tab-{tab.pk}", "fc", "s", lambda: __import__("torch").nn.Linear(2, 2))
    body = student_client.post(url(tab, "weights/reset"), follow=True).content.decode()
    assert "Reset all persisted weights for this graph?" in body and WEIGHTS.count(f"tab-{tab.pk}") == 1
    body = student_client.post(url(tab, "weights/reset"), {"confirm": "yes"}, follow=True).content.decode()
    assert "Persisted weights cleared (1)" in body and WEIGHTS.count(f"tab-{tab.pk}") == 0


def test_switching_tabs_keeps_each_tabs_last_run(student_client, tab, student):
    """Selecting nodes and switching tabs never lose the tab's run (only a reload does)."""
    run = Run.objects.create(owner=student, status=Run.Status.SUCCEEDED)
    tab.last_run = run
    tab.save()
    other = Tab.objects.create(owner=student, title="other")
    body = page(student_client, other)
    assert f'href="/editor/{tab.pk}/?run={run.pk}"' in body


def test_server_rows_speak_about_the_server(student_client, tab):
    """SP3, SP6, SP7: LLM Providers, Optional Packs & Plugins and This Server are about the server;
    offline, the Codex row says no provider is configured; the centres count what is installed."""
    body = page(student_client, tab)
    assert "ChatGPT Codex account" in body and "No LLM provider is configured on this server" in body
    assert "Package Center" in body and "4 packs installed" in body
    assert "Plugin Center" in body and "1 plugin installed, 1 available" in body


def test_tooltips_show_descriptions_on_the_canvas_and_in_the_sidebar_until_turned_off(student_client, tab):
    """SP18: Show node tooltips (on by default): the description card on hover, canvas and sidebar."""
    body = page(student_client, tab)
    assert 'title="Turns scores into probabilities' in body and 'title="Softmax: Turns scores' in body
    student_client.post("/editor/prefs", {"tooltips": "false"})
    body = page(student_client, tab)
    assert 'title="Turns scores into probabilities' not in body and 'title="Softmax: Turns scores' not in body


def test_connection_style_applies_to_trigger_edges_too(student_client, tab):
    """SP20: Circuit (default) draws right-angled traces, Curve smooth curves; trigger edges follow."""
    circuit = page(student_client, tab).split('class="edge trigger"')[0].rsplit("<path", 1)[1]
    assert " H" in circuit and " C" not in circuit
    student_client.post("/editor/prefs", {"connection_style": "curve"})
    curve = page(student_client, tab).split('class="edge trigger"')[0].rsplit("<path", 1)[1]
    assert " C" in curve
