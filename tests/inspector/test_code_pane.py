"""Node details' Code pane: script nodes only and the pane they open on (ND3), a textarea that
posts without JavaScript, port counts that add and remove ports, and the last run's prints,
error and line."""
from __future__ import annotations

import pytest

from apps.editor.models import Tab
from apps.graphs import document
from apps.runs.models import Run, ScriptNodes

pytestmark = pytest.mark.django_db(transaction=True)

CODE = "def run(inputs, params):\n    print('hello')\n    return {'out1': inputs['in1'] / 0}\n"


@pytest.fixture
def tab(student):
    doc = {"nodes": [{"id": "start", "type": "Start", "position": {"x": 0, "y": 0}},
                     {"id": "input", "type": "TensorInput", "position": {"x": 200, "y": 0}},
                     {"id": "script", "type": "PythonScript", "position": {"x": 400, "y": 0},
                      "data": {"params": {"code": CODE, "input_ports": 2}}}],
           "edges": [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "input"},
                     {"id": "e1", "source": "input", "sourceHandle": "tensor", "target": "script", "targetHandle": "in1"},
                     {"id": "e2", "source": "input", "sourceHandle": "tensor", "target": "script", "targetHandle": "in2"}]}
    return Tab.objects.create(owner=student, title="script", document=document.normalise(doc))


def details(client, tab, node="script", query=""):
    return client.get(f"/editor/{tab.pk}/details/{node}/?{query}").content.decode()


def test_a_script_node_opens_on_its_code_and_only_script_nodes_have_it(student_client, tab):
    """ND3: Code: script nodes only, and the tab they open on: the script editor and its port counts."""
    body = details(student_client, tab)
    assert 'aria-current="page" class="current">Code<' in body
    assert '<textarea id="code-script" name="code"' in body and "print(&#x27;hello&#x27;)" in body
    assert 'name="input_ports" type="number" min="1" max="8" value="2"' in body and 'name="output_ports"' in body
    assert ">Code<" not in details(student_client, tab, node="input")


def test_the_script_posts_without_javascript_and_comes_back_to_the_code(student_client, tab):
    response = student_client.post(f"/editor/{tab.pk}/nodes/script/params", {
        "code": "def run(inputs, params):\r\n    return 1\r\n", "input_ports": "2", "output_ports": "1",
        "_details": "1", "_state": "node=script"})
    assert response.status_code == 302 and response.url == f"/editor/{tab.pk}/details/script/"
    tab.refresh_from_db()
    assert tab.document["nodes"][2]["data"]["params"]["code"] == "def run(inputs, params):\n    return 1\n"


def test_fewer_input_ports_remove_their_edges_and_undo_brings_them_back(student_client, tab):
    student_client.post(f"/editor/{tab.pk}/nodes/script/params", {"input_ports": "1", "_state": "node=script"})
    tab.refresh_from_db()
    assert [e["id"] for e in tab.document["edges"]] == ["t", "e1"]
    assert "in2" not in student_client.get(f"/editor/{tab.pk}/?node=script&view=node").content.decode().split('id="node-script"')[1].split("</article>")[0]
    student_client.post(f"/editor/{tab.pk}/undo", {})
    tab.refresh_from_db()
    assert [e["id"] for e in tab.document["edges"]] == ["t", "e1", "e2"]


def test_while_script_nodes_are_off_the_card_the_pane_and_the_run_say_so(student_client, tab):
    off = "Script nodes are off on this server"
    assert off in details(student_client, tab)
    card = student_client.get(f"/editor/{tab.pk}/").content.decode().split('id="node-script"')[1].split("</article>")[0]
    assert f'<p class="card-notice" role="note"><span aria-hidden="true">⚠</span> {off}</p>' in card
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    assert not Run.objects.exists()
    assert "Until then this graph cannot run: PythonScript is a script node." in student_client.get(f"/editor/{tab.pk}/").content.decode()
    ScriptNodes.objects.create(enabled=True)
    assert off not in details(student_client, tab) and "card-notice" not in student_client.get(f"/editor/{tab.pk}/").content.decode()


def test_where_the_sandbox_cannot_be_built_the_card_and_the_pane_say_so(student_client, tab, no_bubblewrap):
    ScriptNodes.objects.create(enabled=True)
    card = student_client.get(f"/editor/{tab.pk}/").content.decode().split('id="node-script"')[1].split("</article>")[0]
    pane = details(student_client, tab)
    assert "Script nodes cannot run on this server</p>" in card
    assert "it cannot build the sandbox that shuts each script in" in pane


def test_the_last_runs_prints_and_error_name_the_scripts_line(student_client, tab, student):
    run = Run.objects.create(owner=student, status=Run.Status.FAILED, options={"record": True},
                             nodes={"input": {"status": "completed"},
                                    "script": {"status": "error", "error": "PythonScript: line 3: ZeroDivisionError: division by zero"}},
                             log=[{"node": "script", "label": "PythonScript", "text": "hello", "level": "info"},
                                  {"node": "script", "label": "PythonScript", "text": "Node PythonScript error: …", "level": "error"}])
    body = details(student_client, tab, query=f"run={run.pk}")
    assert "PythonScript: line 3: ZeroDivisionError: division by zero" in body
    assert '<pre class="plain">hello</pre>' in body and '<li class="error-line">3</li>' in body


def test_before_a_run_the_pane_invites_one(student_client, tab):
    assert "Not in the last run yet" in details(student_client, tab)
