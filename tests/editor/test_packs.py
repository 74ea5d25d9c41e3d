"""Packs on a server: an administrator switches one off and students stop seeing it; a graph
that uses it still opens but does not run; the Package and Plugin Centers; a plugin panel
docked in the right-hand column (IN1), undocked or closed."""
from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.editor.models import Tab
from apps.editor.prefs import COOKIE
from apps.graphs import document
from apps.graphs.models import PackSwitch
from apps.graphs.nodes import packs
from apps.runs.models import Run
from tests.demo_pack import demo_pack, graph_with  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def admin_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("teacher", is_staff=True, is_superuser=True))
    return client


def tab_with(user, type_key: str) -> Tab:
    return Tab.objects.create(owner=user, title="packs", document=document.normalise(graph_with(type_key)))


def page(client, tab, query="") -> str:
    return client.get(f"/editor/{tab.pk}/{query}").content.decode()


def test_the_palette_and_quick_search_offer_an_enabled_packs_nodes(student_client, student, demo_pack):
    tab = tab_with(student, "Softmax")
    body = page(student_client, tab, "?q=Double")
    assert body.count('value="demo:Double"') >= 2  # the sidebar and the quick search


def test_a_disabled_packs_nodes_leave_the_palette_and_quick_search(student_client, student, demo_pack):
    PackSwitch.switch("demo", False)
    body = page(student_client, tab_with(student, "Softmax"), "?q=Double")
    assert 'value="demo:Double"' not in body


def test_a_node_of_a_disabled_pack_cannot_be_added(student_client, student, demo_pack):
    PackSwitch.switch("demo", False)
    tab = tab_with(student, "Softmax")
    response = student_client.post(f"/editor/{tab.pk}/nodes/add", {"type": "demo:Double"}, follow=True)
    assert "which is disabled on this server" in response.content.decode()
    assert len(Tab.objects.get(pk=tab.pk).document["nodes"]) == 3


def test_a_graph_using_a_disabled_pack_opens_and_its_card_names_the_pack(student_client, student, demo_pack):
    PackSwitch.switch("demo", False)
    body = page(student_client, tab_with(student, "demo:Double"), "?node=d")
    assert "Pack demo: disabled" in body
    assert "Needs the pack demo</strong>, which is disabled on this server" in body  # its panel says so too


def test_a_graph_using_a_pack_not_installed_opens_with_a_placeholder_card(student_client, student):
    body = page(student_client, tab_with(student, "vision:Edu-Blur"))
    assert 'aria-label="Edu-Blur (vision:Edu-Blur)"' in body  # named without the namespace, typed with it
    assert "Pack vision: not installed" in body
    assert 'aria-label="Input tensor of Edu-Blur, from TensorInput.tensor"' in body  # its edge still draws


def test_an_imported_file_using_a_missing_pack_opens(student_client, student):
    upload = json.dumps(graph_with("vision:Edu-Blur")).encode()
    response = student_client.post("/editor/tabs/import", {"file": SimpleUploadedFile("g.json", upload)})
    assert response.status_code == 302
    assert Tab.objects.get(owner=student).document["nodes"][2]["type"] == "vision:Edu-Blur"


def test_run_is_refused_naming_the_disabled_pack_and_what_the_administrator_does(student_client, student, demo_pack):
    PackSwitch.switch("demo", False)
    tab = tab_with(student, "demo:Double")
    body = student_client.post(f"/editor/{tab.pk}/run", follow=True).content.decode()
    assert ("This graph uses nodes of the pack &#x27;demo&#x27;, which is disabled on this server. An administrator "
            "enables it in Settings → Optional Packs &amp; Plugins → Package Center") in body
    assert not Run.objects.exists()


def test_the_same_graph_runs_once_the_pack_is_enabled_again(student_client, student, demo_pack):
    PackSwitch.switch("demo", False)
    PackSwitch.switch("demo", True)
    tab = tab_with(student, "demo:Double")
    student_client.post(f"/editor/{tab.pk}/run")
    assert Run.objects.filter(owner=student).count() == 1


# -- the centers ------------------------------------------------------------------------------

def test_settings_rows_count_installed_packs_and_plugins(student_client, student, demo_pack):
    """SP7: Package Center counts installed packs; Plugin Center installed and available plugins."""
    body = page(student_client, tab_with(student, "Softmax"))
    assert "5 packs installed" in body and "1 plugin installed, 1 available" in body
    PackSwitch.switch("foundations", False)
    assert "1 plugin installed, 0 available" in page(student_client, tab_with(student, "Softmax"))


def test_the_package_center_lists_each_pack_with_version_nodes_examples_and_state(student_client, demo_pack):
    body = student_client.get("/editor/packs/").content.decode()
    for text in ("Demo", "version 9.1", "demo:Double", "Doubles every value.", "Doubling, <em>step by step</em>.",
                 "Foundations", "✓ Enabled", "pip install", "restarts"):
        assert text in body
    assert "Disable Demo" not in body  # a student reads, never switches


def test_a_student_sees_only_enabled_packs(student_client, demo_pack):
    PackSwitch.switch("demo", False)
    body = student_client.get("/editor/packs/").content.decode()
    assert "demo:Double" not in body and "1 more installed pack is disabled by the administrator" in body


def test_staff_see_every_pack_with_its_switch(admin_client, demo_pack):
    PackSwitch.switch("demo", False)
    body = admin_client.get("/editor/packs/").content.decode()
    assert "✗ Disabled" in body and "Enable Demo" in body and "Disable Foundations" in body


def test_staff_switch_a_pack_off_and_on_for_the_server(admin_client, demo_pack):
    admin_client.post("/editor/packs/switch", {"pack": "demo", "enabled": "false"})
    assert "demo" not in PackSwitch.enabled_packs()
    admin_client.post("/editor/packs/switch", {"pack": "demo", "enabled": "true"})
    assert "demo" in PackSwitch.enabled_packs()


def test_a_student_cannot_switch_a_pack(student_client, demo_pack):
    response = student_client.post("/editor/packs/switch", {"pack": "demo", "enabled": "false"})
    assert response.status_code == 403 and "demo" in PackSwitch.enabled_packs()


def test_switching_a_pack_that_is_not_installed_says_so(admin_client):
    body = admin_client.post("/editor/packs/switch", {"pack": "vision", "enabled": "false"}, follow=True).content.decode()
    assert "There is no pack &#x27;vision&#x27; on this server." in body


def test_the_admin_lists_a_row_per_installed_pack(admin_client, demo_pack):
    body = admin_client.get("/admin/graphs/packswitch/").content.decode()
    for name in ("deep", "demo", "edu", "foundations", "rl"):
        assert f">{name}<" in body


def test_the_plugin_center_lists_the_packs_with_a_panel(student_client, demo_pack):
    body = student_client.get("/editor/plugins/").content.decode()
    assert "Foundations" in body and "Dock Foundations panel in the Inspector" in body
    assert "demo:Double" not in body


@pytest.fixture
def example_pack(demo_pack, tmp_path, monkeypatch):
    (tmp_path / "doubling.json").write_text(json.dumps({**graph_with("demo:Double"), "name": "Doubling 101",
                                                        "description": "Twice as much."}))
    with_examples = packs.Pack(**{**demo_pack.__dict__, "examples": tmp_path})
    monkeypatch.setitem(packs.installed(), "demo", with_examples)
    return with_examples


def test_an_example_graph_opens_as_a_new_tab(student_client, student, example_pack):
    assert "Doubling 101" in student_client.get("/editor/packs/").content.decode()
    response = student_client.post("/editor/packs/example", {"pack": "demo", "example": "doubling"})
    tab = Tab.objects.get(owner=student)
    assert response.status_code == 302 and response.url == f"/editor/{tab.pk}/"
    assert tab.title == "Doubling 101" and tab.document["nodes"][2]["type"] == "demo:Double"


def test_an_example_of_a_disabled_pack_does_not_open(student_client, student, example_pack):
    PackSwitch.switch("demo", False)
    body = student_client.post("/editor/packs/example", {"pack": "demo", "example": "doubling"}, follow=True)
    assert "There is no such example in an enabled pack on this server." in body.content.decode()
    assert not Tab.objects.filter(owner=student).exists()


# -- a docked plugin panel --------------------------------------------------------------------

def dock(client, tab, **fields):
    return client.post("/editor/prefs", {"_tab": tab.pk, **fields})


def test_a_docked_panel_brings_the_right_hand_column(student_client, student):
    """IN1: the right-hand column appears when a plugin panel is docked there."""
    tab = tab_with(student, "Softmax")
    assert "with-side" not in page(student_client, tab)
    response = dock(student_client, tab, panel="foundations", panel_docked="true")
    assert response.status_code == 302 and json.loads(response.cookies[COOKIE].value)["panel"] == "foundations"
    body = page(student_client, tab)
    assert "with-side" in body and 'class="side-stack"' in body and "Select a node to see its formulas." in body


def test_the_docked_panel_shares_the_column_with_the_selected_node(student_client, student):
    tab = tab_with(student, "Softmax")
    dock(student_client, tab, panel="foundations")
    body = page(student_client, tab, "?node=d")
    assert 'aria-label="Node Softmax"' in body and "This node has no entry in the formula sheet." in body


def test_an_undocked_panel_floats_and_the_column_goes(student_client, student):
    tab = tab_with(student, "Softmax")
    dock(student_client, tab, panel="foundations")
    dock(student_client, tab, panel_docked="false")
    body = page(student_client, tab)
    assert 'class="plugin-panel floating"' in body and "with-side" not in body and ">Dock</button>" in body


def test_a_closed_panel_is_gone(student_client, student):
    tab = tab_with(student, "Softmax")
    dock(student_client, tab, panel="foundations")
    dock(student_client, tab, panel="")
    assert "plugin-panel" not in page(student_client, tab)


def test_the_panel_of_a_disabled_plugin_does_not_show(student_client, student):
    tab = tab_with(student, "Softmax")
    dock(student_client, tab, panel="foundations")
    PackSwitch.switch("foundations", False)
    assert "plugin-panel" not in page(student_client, tab)


def test_the_formula_sheet_typesets_the_selected_edu_nodes_steps():
    from django.template.loader import render_to_string
    from codefyui_foundations.formulas import panel_context
    html = render_to_string("foundations/formula_sheet.html",
                            {"plugin_panel": panel_context("foundations:Edu-ColumnStats")})
    assert "Edu-ColumnStats: its steps" in html
    for step in ("input", "col_sum", "means", "deviations", "stds", "range"):
        assert f"<dt>{step}</dt>" in html
    assert html.count("<math") >= 6 and "$" not in html


@pytest.mark.parametrize("query", ["?node=d&view=forward", "?node=d&view=steps", "?node=d&view=backward", "?node=x&view=forward"])
def test_the_inspector_of_a_placeholder_and_its_neighbours_answers(student_client, student, query):
    tab = tab_with(student, "vision:Edu-Blur")
    assert student_client.get(f"/editor/{tab.pk}/{query}").status_code == 200


def test_node_details_of_a_placeholder_says_which_pack_it_needs(student_client, student):
    tab = tab_with(student, "vision:Edu-Blur")
    for pane in ("", "?pane=docs", "?pane=stats", "?pane=inputs"):
        response = student_client.get(f"/editor/{tab.pk}/details/d/{pane}")
        assert response.status_code == 200
    assert "Needs the pack vision</strong>, which is not installed on this server" in response.content.decode()


def test_an_example_in_a_folder_of_its_own_opens_too(student_client, student, example_pack):
    folder = example_pack.examples / "C1" / "Twice"
    folder.mkdir(parents=True)
    (folder / "graph.json").write_text(json.dumps({**graph_with("demo:Double"), "name": "Twice, foldered"}))
    assert 'value="C1/Twice/graph"' in student_client.get("/editor/packs/").content.decode()
    student_client.post("/editor/packs/example", {"pack": "demo", "example": "C1/Twice/graph"})
    assert Tab.objects.get(owner=student).title == "Twice, foldered"


# -- the datasets on this server (Package Center) -------------------------------------------------

@pytest.fixture
def empty_data_dir(tmp_path, monkeypatch):
    from codefyui import conf
    monkeypatch.setattr(conf, "DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(conf, "TOKENIZER_DIR", str(tmp_path / "tokenizers"))
    return tmp_path / "data"


def test_the_package_center_lists_the_datasets_installed_and_missing(student_client, empty_data_dir):
    body = student_client.get("/editor/packs/").content.decode()
    assert "Datasets on this server" in body
    for text in ("<code>Digits</code>", "✓ Comes with CodefyUI", "Comes with CodefyUI: 1,438 examples to train on",
                 "<code>MNIST</code>", "◐ Sample only", "the 5,000-image sample of MNIST that comes with CodefyUI",
                 "<code>CIFAR10</code>", "✗ Not installed", "<code>cl100k_base</code>", "<code>gpt2</code>",
                 "Your administrator can add the datasets that are not installed."):
        assert text in body
    assert "importdataset" not in body and str(empty_data_dir) not in body   # an administrator's details


def test_staff_see_where_the_missing_files_go_and_the_command(admin_client, empty_data_dir):
    body = admin_client.get("/editor/packs/").content.decode()
    assert ".venv/bin/python manage.py importdataset FILE..." in body
    assert f"data_batch_1.bin, data_batch_2.bin, data_batch_3.bin, data_batch_4.bin, data_batch_5.bin, " \
           f"test_batch.bin <span class=\"hint\">in {empty_data_dir / 'cifar-10-batches-bin'}</span>" in body
    assert "r50k_base.tiktoken" in body and "p50k_base.tiktoken" in body
    assert "cl100k_base.tiktoken" not in body   # it ships: nothing is missing


def test_the_plugin_center_lists_no_datasets(student_client):
    assert "Datasets on this server" not in student_client.get("/editor/plugins/").content.decode()
