"""The Python view, its download, the JSON API and the CLI: the graph as plain PyTorch, or Run's
own message and no script."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from apps.editor.models import Tab
from apps.graphs import document
from apps.graphs.models import Graph, PackSwitch
from apps.runs.as_python import script_filename
from tests.conftest import EXAMPLES, example

pytestmark = pytest.mark.django_db


@pytest.fixture
def tab(student, walkthrough):
    return Tab.objects.create(owner=student, title="Walkthrough", document=document.normalise(walkthrough))


def draft(doc: dict) -> dict:
    return {**doc, "edges": [e for e in doc["edges"] if e.get("type") != "trigger"]}


def test_the_toolbar_has_a_python_link_that_works_without_javascript(student_client, tab):
    page = student_client.get(f"/editor/{tab.pk}/").content.decode()
    link = page.split('data-python', 1)[0].rsplit("<a ", 1)[1]
    assert f'href="/editor/{tab.pk}/python' in link and 'id="python-dialog"' in page


def test_the_python_page_shows_highlighted_code_to_copy_and_download(student_client, tab):
    page = student_client.get(f"/editor/{tab.pk}/python")
    text = page.content.decode()
    assert page.status_code == 200 and "<html" in text
    assert '<div class="python-code">' in text and '<span class="c1"># Softmax (softmax): dim=-1</span>' in text
    assert "All 4 nodes are written as plain PyTorch." in text   # in the view's words (no scikit-learn here)
    assert "# All 4 nodes are plain PyTorch." in page.context["script"].text   # and the script's header
    assert 'data-copy="python-text" hidden' in text and 'id="python-text"' in text   # Copy appears with a script
    assert f'href="/editor/{tab.pk}/python/download" download="Softmax_walkthrough.py"' in text


def test_the_view_says_in_words_which_nodes_the_engine_runs_and_where_to_run_the_script(student_client, student):
    doc = document.normalise(example("classical-iris-knn"))
    tab = Tab.objects.create(owner=student, title="Iris", document=doc)
    page = student_client.get(f"/editor/{tab.pk}/python")
    made, text = page.context["script"], page.content.decode()
    others = made.total - made.plain
    assert others >= 1, made.text
    assert (f"{made.plain} of the {made.total} nodes are written as plain PyTorch or scikit-learn; the other {others} "
            f"{'is one line' if others == 1 else 'are one line each'} that asks CodefyUI to run") in text
    assert "in CodefyUI&#x27;s folder: it prints the same numbers" in text
    assert made.text.splitlines()[1] == (f"# {made.plain} of the {made.total} nodes are plain PyTorch or scikit-learn; "
                                         f"the other {others} run with CodefyUI's")


def test_each_line_of_the_code_is_marked_with_its_indent_so_a_long_one_wraps_under_itself(student_client, student):
    doc = document.normalise(example("train-digits"))
    tab = Tab.objects.create(owner=student, title="Digits", document=doc)
    text = student_client.get(f"/editor/{tab.pk}/python").content.decode()
    assert '<span class="line i0"><span class="kn">import</span>' in text
    assert '<span class="line i1">' in text and '<span class="line i2">' in text   # the training loop's body
    script = student_client.get(f"/editor/{tab.pk}/python/download").content.decode()
    assert text.count('<span class="line i') == len(script.splitlines())


def test_with_htmx_it_is_the_dialogs_fragment(student_client, tab):
    text = student_client.get(f"/editor/{tab.pk}/python", HTTP_HX_REQUEST="true").content.decode()
    assert text.lstrip().startswith('<section id="python"') and "<html" not in text


def test_the_download_is_the_script_as_a_py_file(student_client, tab):
    answer = student_client.get(f"/editor/{tab.pk}/python/download")
    assert answer["Content-Type"].startswith("text/x-python")
    assert answer["Content-Disposition"] == 'attachment; filename="Softmax_walkthrough.py"'
    compile(answer.content.decode(), "Softmax_walkthrough.py", "exec")


def test_a_draft_gets_runs_message_and_no_script(student_client, student, walkthrough):
    tab = Tab.objects.create(owner=student, title="Draft", document=document.normalise(draft(walkthrough)))
    page = student_client.get(f"/editor/{tab.pk}/python")
    text = page.content.decode()
    assert page.status_code == 400 and "No entry points defined." in text and "python-code" not in text
    assert student_client.get(f"/editor/{tab.pk}/python/download").status_code == 400


def test_a_strangers_tab_is_not_found(client, stranger, tab):
    client.force_login(stranger)
    assert client.get(f"/editor/{tab.pk}/python").status_code == 404
    assert client.get(f"/editor/{tab.pk}/python/download").status_code == 404


def test_the_api_gives_a_saved_graphs_script(student_client, student, walkthrough):
    graph = Graph.objects.create_owned(student, "Walkthrough", document.normalise(walkthrough))
    body = student_client.get(f"/api/graphs/{graph.pk}/python").json()
    assert (body["plain_nodes"], body["total_nodes"], body["same_numbers"], body["filename"]) == \
        (4, 4, True, "Softmax_walkthrough.py")
    assert "torch.softmax(reshaped, dim=-1)" in body["script"]


def test_the_api_gives_a_posted_documents_script_or_runs_problems(student_client, walkthrough):
    post = lambda doc: student_client.post("/api/graphs/python", json.dumps(doc), content_type="application/json")
    assert "print('[probabilities]', softmax)" in post(walkthrough).json()["script"]
    refused = post(draft(walkthrough))
    assert refused.status_code == 400 and "script" not in refused.json()
    assert refused.json()["problems"][0].startswith("No entry points defined.")


def test_a_pack_switched_off_gets_runs_message(student_client):
    doc = example("text-tokens")
    PackSwitch.objects.update_or_create(name="foundations", defaults={"enabled": False})
    answer = student_client.post("/api/graphs/python", json.dumps(doc), content_type="application/json")
    assert answer.status_code == 400 and "foundations" in answer.json()["detail"]


def test_the_cli_writes_the_script_or_says_why_not(tmp_path):
    out = tmp_path / "walkthrough.py"
    done = subprocess.run([sys.executable, "manage.py", "graphpython", str(EXAMPLES / "walkthrough.json"), "-o", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "4 of 4 nodes are plain PyTorch" in done.stderr
    assert "torch.softmax" in out.read_text()
    path = tmp_path / "draft.json"
    path.write_text(json.dumps(draft(example("walkthrough"))))
    refused = subprocess.run([sys.executable, "manage.py", "graphpython", str(path)], capture_output=True, text=True)
    assert refused.returncode == 1 and "No entry points defined." in refused.stderr and refused.stdout == ""


@pytest.mark.parametrize("name, filename", [("Softmax walkthrough", "Softmax_walkthrough.py"),
                                            ('"; rm -rf /', "rm_-rf.py"), ("Ziffern ü", "Ziffern.py"), ("", "graph.py")])
def test_the_download_is_named_after_the_graph_in_safe_letters(name, filename):
    assert script_filename(name) == filename
