"""Script nodes are off until an administrator turns them on, and run only in a run worker."""
from __future__ import annotations

import pytest

from apps.graphs import document
from apps.graphs.nodes.base import resolve
from apps.runs import service
from apps.runs.models import Run, ScriptNodes
from codefyui import conf

pytestmark = pytest.mark.django_db(transaction=True)


def script_graph(**params) -> dict:
    """Start -> a PythonScript node."""
    return {"nodes": [{"id": "start", "type": "Start"},
                      {"id": "script", "type": "PythonScript", "data": {"label": "Double it", "params": params}}],
            "edges": [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "script"}]}


def start(user):
    return service.start_run(user, document.normalise(script_graph()))


def test_while_script_nodes_are_off_the_graph_does_not_run(student):
    with pytest.raises(service.RunRefused) as refused:
        start(student)
    assert refused.value.problems == ["Script nodes are off on this server; an administrator can turn them on "
                                      "(CODEFYUI_SCRIPT_NODES=1, or Script nodes in the admin). Until then this "
                                      "graph cannot run: Double it is a script node."]
    assert not Run.objects.exists()


def test_the_admins_switch_or_the_setting_turns_them_on(monkeypatch):
    assert not ScriptNodes.on()
    ScriptNodes.objects.create(enabled=True)
    assert ScriptNodes.on()
    ScriptNodes.objects.update(enabled=False)
    monkeypatch.setattr(conf, "SCRIPT_NODES", True)
    assert ScriptNodes.on()


def test_without_run_workers_a_script_is_refused_not_run_in_the_server(student, monkeypatch):
    monkeypatch.setattr(conf, "SCRIPT_NODES", True)
    run = service.wait_for(start(student).pk)
    assert run.status == "failed" and "Script nodes run only in a run worker" in run.error


def test_the_ports_follow_the_port_counts_and_types():
    node = resolve("PythonScript")
    params = {"input_ports": 3, "output_ports": 2, "input_types": "TENSOR, SCALAR", "output_types": "TENSOR,BOGUS"}
    assert [(p.name, p.type, p.optional) for p in node.input_ports(params)] == [
        ("in1", "TENSOR", True), ("in2", "SCALAR", True), ("in3", "SCALAR", True)]
    assert [(p.name, p.type) for p in node.output_ports(params)] == [("out1", "TENSOR"), ("out2", "ANY")]
    assert [p.name for p in node.output_ports({})] == ["out1"]


def test_where_the_sandbox_cannot_be_built_a_switched_on_script_does_not_run(student, monkeypatch, no_bubblewrap):
    monkeypatch.setattr(conf, "SCRIPT_NODES", True)
    with pytest.raises(service.RunRefused) as refused:
        start(student)
    problem, = refused.value.problems
    assert problem.startswith("Script nodes cannot run on this server: it cannot build the sandbox that shuts "
                              "each script in (bubblewrap (the bwrap command) is not installed). An administrator "
                              "installs Debian's bubblewrap package")
    assert problem.endswith("Until then this graph cannot run: Double it is a script node.")
    assert not Run.objects.exists()


def test_the_admins_switch_says_why_scripts_cannot_run(admin_client, no_bubblewrap):
    listed = admin_client.get("/admin/runs/scriptnodes/").content.decode()  # before the switch's row exists
    assert "bubblewrap (the bwrap command) is not installed" in listed
    switch = ScriptNodes.objects.create(enabled=True)
    page = admin_client.get(f"/admin/runs/scriptnodes/{switch.pk}/change/").content.decode()
    assert "bubblewrap (the bwrap command) is not installed" in page
    assert ScriptNodes.refusal().startswith("Script nodes cannot run on this server")


def test_where_the_sandbox_can_be_built_the_admin_says_it_is_ready(admin_client):
    ScriptNodes.objects.create(enabled=True)
    assert "Ready: each script runs in a bubblewrap sandbox." in admin_client.get("/admin/runs/scriptnodes/").content.decode()
    assert ScriptNodes.refusal() is None
