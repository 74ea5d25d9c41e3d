"""A look over a student's shoulder: the teacher sees the student's graph, its run, the
Inspector, Node details and downloads, read-only; the student's tab, selection and undo
history are untouched; every write is refused; every look is in the audit log."""
import pytest
import torch
from django.contrib.admin.sites import site
from django.urls import reverse

from apps.accounts.models import ApiToken
from apps.classes.models import Look
from apps.editor.models import HistoryStep, Tab
from apps.graphs import document
from apps.runs.models import Run


@pytest.fixture
def work(pupils, walkthrough, fresh_store):
    """amir's walkthrough tab, with an undo step and an active segment, and its recorded run."""
    amir = pupils[0]
    walkthrough["segmentGroups"] = [{"id": "seg-1", "headNodeId": "reshape", "tailNodeId": "softmax"}]
    doc = document.normalise(walkthrough)
    tab = Tab.objects.create(owner=amir, title="Walkthrough", document=doc, active_segment="seg-1")
    HistoryStep.push(tab, HistoryStep.UNDO)
    run = Run.objects.create(owner=amir, status=Run.Status.SUCCEEDED, origin=tab.origin, graph_name="Walkthrough",
                             nodes={"softmax": {"status": "completed"}})
    tab.last_run = run
    tab.save(update_fields=["last_run"])
    fresh_store.open_run(str(run.pk))
    fresh_store.put(str(run.pk), "softmax", "output", torch.full((1, 16), 0.0625))
    fresh_store.close_run(str(run.pk))
    return tab, run


def kept(tab):
    """What a look must not change: the tab's document, revision, segment, run and undo steps."""
    return (Tab.objects.filter(pk=tab.pk).values("document", "revision", "active_segment", "last_run").get(),
            list(HistoryStep.objects.filter(tab=tab).values("pk", "kind", "snapshot")))


def test_a_look_shows_the_students_graph_and_run_with_nothing_that_edits(teacher_client, work):
    tab, run = work
    before = kept(tab)
    page = teacher_client.get(reverse("editor:tab", args=[tab.pk]), {"run": str(run.pk), "node": "softmax"})
    html = page.content.decode()
    assert page.status_code == 200
    assert "look-banner" in html and "Amir" in html and "Walkthrough" in html
    assert 'id="node-softmax"' in html and "Inspector" in html
    assert "capture-" not in html or f"/editor/runs/{run.pk}/outputs/" in html   # downloads are there when shown
    for edit in ('action="/editor/', 'hx-post="/editor/', "data-add-url", "data-connect-url", "data-move-url",
                 "data-activate-url", ">Run</button>", ">Undo</button>", "Delete node", "Apply parameters"):
        assert edit not in html, edit
    assert kept(tab) == before


def test_node_details_and_a_download_are_read_only_too(teacher_client, work):
    tab, run = work
    before = kept(tab)
    details = teacher_client.get(reverse("editor:node-details", args=[tab.pk, "softmax"]), {"run": str(run.pk)})
    assert details.status_code == 200 and 'action="/editor/' not in details.content.decode()
    npy = teacher_client.get(reverse("editor:capture-npy", args=[run.pk, "softmax", "output"]))
    assert npy.status_code == 200
    assert kept(tab) == before


def test_every_look_is_in_the_audit_log_once_a_minute(teacher_client, teacher, pupils, work):
    tab, run = work
    url = reverse("editor:tab", args=[tab.pk])
    teacher_client.get(url)
    teacher_client.get(url, {"node": "softmax"})   # a click inside the page is the same look
    teacher_client.get(reverse("editor:node-details", args=[tab.pk, "softmax"]))
    looks = list(Look.objects.order_by("when").values_list("teacher", "student", "what", "ref"))
    amir = pupils[0].pk
    assert looks == [(teacher.pk, amir, "graph", str(tab.pk)), (teacher.pk, amir, "details", str(tab.pk))]


def test_a_students_own_page_is_no_look(client, pupils, work):
    tab, _run = work
    client.force_login(pupils[0])
    html = client.get(reverse("editor:tab", args=[tab.pk])).content.decode()
    assert "look-banner" not in html and "data-add-url" in html
    assert not Look.objects.exists()


def test_every_write_of_the_teacher_to_the_students_work_is_refused(teacher_client, teacher, client, work):
    tab, run = work
    before = kept(tab)
    for name, args in (("editor:node-add", [tab.pk]), ("editor:run", [tab.pk]), ("editor:undo", [tab.pk]),
                       ("editor:tab-rename", [tab.pk]), ("editor:segment-clear", [tab.pk]),
                       ("editor:run-delete", [run.pk]), ("editor:run-open", [run.pk])):
        assert teacher_client.post(reverse(name, args=args), {"type": "Start", "title": "x"}).status_code == 404, name
    auth = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(teacher)}"}
    assert client.post(f"/api/runs/{run.pk}/cancel", **auth).status_code == 404
    assert client.delete(f"/api/runs/{run.pk}", **auth).status_code == 404
    assert client.delete(f"/api/execution/outputs/{run.pk}", **auth).status_code == 404
    assert kept(tab) == before and Run.objects.filter(pk=run.pk).exists()


def test_the_api_answers_a_teacher_about_their_students_runs_and_logs_it(client, teacher, other_teacher, work):
    _tab, run = work
    auth = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(teacher)}"}
    assert client.get(f"/api/runs/{run.pk}", **auth).json()["status"] == "succeeded"
    assert client.get(f"/api/execution/outputs/{run.pk}", **auth).json()[0]["node_id"] == "softmax"
    assert client.get(f"/api/execution/outputs/{run.pk}/softmax/output", **auth).status_code == 200
    assert client.get(f"/api/execution/outputs/{run.pk}/softmax/output/stats", **auth).status_code == 200
    assert set(Look.objects.values_list("what", flat=True)) == {"run", "outputs"}
    other = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(other_teacher)}"}
    assert client.get(f"/api/runs/{run.pk}", **other).status_code == 404
    assert client.get(f"/api/execution/outputs/{run.pk}", **other).status_code == 404


def test_another_teacher_and_a_classmate_cannot_look(client, other_teacher, pupils, work):
    tab, run = work
    for user in (other_teacher, pupils[1]):
        client.force_login(user)
        assert client.get(reverse("editor:tab", args=[tab.pk])).status_code == 404
        assert client.get(reverse("editor:capture-npy", args=[run.pk, "softmax", "output"])).status_code == 404
    assert not Look.objects.exists()


def test_the_audit_log_is_read_only_in_the_admin(rf, django_user_model):
    admin = site._registry[Look]
    request = rf.get("/")
    request.user = django_user_model(is_superuser=True, is_staff=True)
    assert not admin.has_add_permission(request)
    assert not admin.has_change_permission(request) and not admin.has_delete_permission(request)


def test_the_node_panel_of_a_look_shows_the_students_values_disabled(teacher_client, work):
    tab, run = work
    html = teacher_client.get(reverse("editor:tab", args=[tab.pk]),
                              {"run": str(run.pk), "node": "reshape", "view": "node"}).content.decode()
    assert "<fieldset disabled" in html and 'value="1,16"' in html
    for edit in ("Apply parameters", "Delete node", "Rename</button>", 'name="source"', "Move up"):
        assert edit not in html, edit
