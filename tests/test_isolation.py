"""Isolation and abuse, generated from the URL configuration: every route the project has
(walked from Django's resolver, so a route added later is in this suite without anyone
listing it), asked by another student, by a teacher of another class and by an anonymous
visitor with the first student's graph, tab, run, node, edge, segment, file, class and
handout ids, in every method, answers 404, 405, 401 or the login page, shows nothing of the
first student and changes nothing of theirs. The first student's own teacher may read their
work but changes none of it outside the class pages. Every POST or DELETE without a CSRF
token is refused. Every WebSocket route refuses a stranger, another class's teacher, a
visitor and a foreign origin. (Login throttling: tests/test_security.py.)"""
from __future__ import annotations

import json
import re

import pytest
import torch
from channels.layers import channel_layers
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.urls.resolvers import RegexPattern, RoutePattern
from django.utils.regex_helper import normalize

from apps.accounts.models import Classroom, Enrolment
from apps.accounts.roles import enrol, make_teacher
from apps.classes.models import Handout, HandoutCopy
from apps.editor.models import HistoryStep, Tab
from apps.graphs import document
from apps.graphs.models import Graph
from apps.runs import service
from apps.runs.models import Run
from codefyui.routing import same_origin, websocket_urlpatterns

MARKER = "q7xmarker"  # in every name, label and log line of the first student; in no answer to anyone else


def _template(pattern) -> str:
    """A URL pattern as a str.format template: "<int:tab_id>/run" -> "{tab_id}/run"."""
    if isinstance(pattern, RoutePattern):
        return re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(pattern))
    if isinstance(pattern, RegexPattern):
        form, _params = normalize(pattern.regex.pattern)[0]
        return re.sub(r"%\((\w+)\)s", r"{\1}", form.replace("{", "{{").replace("}", "}}"))
    raise TypeError(f"a URL pattern of a kind this suite does not know: {pattern!r}")


def routes(patterns, prefix: str = ""):
    """(URL template, view) of every route below these patterns."""
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from routes(entry.url_patterns, prefix + _template(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + _template(entry.pattern), entry.callback


HTTP_ROUTES = sorted(set(routes(get_resolver().url_patterns)), key=lambda r: r[0])
SOCKET_ROUTES = [template for template, _ in routes(websocket_urlpatterns) if "{" in template]


# -- the first student's things ---------------------------------------------------------------

@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user(f"owner-{MARKER}")  # no password: nothing to hash


@pytest.fixture
def other(django_user_model):
    return django_user_model.objects.create_user("other-k2z")


@pytest.fixture
def own_teacher(django_user_model):
    """The first student's teacher (``theirs`` puts the student in the class)."""
    user = django_user_model.objects.create_user("teacher-own-w4v")
    make_teacher(user, Classroom.objects.create(name=f"Class {MARKER}"))
    return user


@pytest.fixture
def other_teacher(django_user_model):
    """A teacher of another class."""
    user = django_user_model.objects.create_user("teacher-other-j8p")
    make_teacher(user, Classroom.objects.create(name="Another class"))
    return user


@pytest.fixture
def theirs(owner, own_teacher, walkthrough, fresh_store):
    """Everything the first student has, and the id every kind of URL argument takes."""
    walkthrough["name"] = f"Graph {MARKER}"
    walkthrough["description"] = f"Described {MARKER}"
    walkthrough["nodes"][3]["data"]["label"] = f"Softmax {MARKER}"
    walkthrough["segmentGroups"] = [{"id": "seg-reshape-softmax", "headNodeId": "reshape", "tailNodeId": "softmax"}]
    doc = document.normalise(walkthrough)
    graph = Graph.objects.create(owner=owner, name=f"Graph {MARKER}", document=doc)
    run = Run.objects.create(owner=owner, graph=graph, graph_name=f"Run {MARKER}", status=Run.Status.SUCCEEDED,
                             nodes={"softmax": {"status": "completed", "summary": {"output": {
                                 "type": "tensor", "shape": [1, 16], "dtype": "float32", "note": MARKER}}}},
                             log=[{"level": "info", "text": f"printed {MARKER}"}])
    tab = Tab.objects.create(owner=owner, title=f"Tab {MARKER}", document=doc, graph=graph, last_run=run,
                             active_segment="seg-reshape-softmax")
    fresh_store.open_run(str(run.pk))
    fresh_store.put(str(run.pk), "softmax", "output", torch.full((1, 16), 0.0625))
    fresh_store.close_run(str(run.pk))
    service.user_files(owner.pk).save("weights.pt", f"weights {MARKER}".encode())  # a name is in URLs: no marker
    classroom = own_teacher.classes_taught.get()
    enrol(owner, classroom)
    handout = Handout.objects.create(classroom=classroom, title=f"Lesson {MARKER}", document=doc, teacher=own_teacher)
    ids = {
        "tab_id": tab.pk, "run_id": run.pk, "pk": graph.pk, "graph_id": graph.pk, "node_id": "softmax",
        "port": "output", "name": "weights.pt", "edge_id": doc["edges"][-1]["id"], "segment_id": "seg-reshape-softmax",
        # the admin's own arguments
        "app_label": "graphs", "object_id": graph.pk, "content_type_id": ContentType.objects.get_for_model(Graph).pk,
        "id": owner.pk, "url": "nothing-here",
        # the class pages'
        "class_id": classroom.pk, "student_id": owner.pk, "handout_id": handout.pk,
    }
    return {"graph": graph, "run": run, "tab": tab, "ids": ids, "snapshot": snapshot(owner, fresh_store, run)}


def snapshot(owner, store, run) -> dict:
    """What must not change: every object of the first student, and their capture."""
    return {
        "graphs": list(Graph.objects.filter(owner=owner).values("pk", "name", "document")),
        "tabs": list(Tab.objects.filter(owner=owner).values(
            "pk", "title", "document", "revision", "active_segment", "last_run")),
        "history": list(HistoryStep.objects.filter(tab__owner=owner).values("pk", "kind", "snapshot")),
        "runs": list(Run.objects.filter(owner=owner).values("pk", "status", "graph_name", "nodes", "log")),
        "capture": store.get(str(run.pk), "softmax", "output") is not None,
        "files": [(f.name, f.size) for f in service.user_files(owner.pk).list()],
        "account": list(type(owner).objects.filter(pk=owner.pk).values("username", "password", "is_active")),
        "class": list(Enrolment.objects.filter(student=owner).values("classroom")),
        "handouts": list(HandoutCopy.objects.filter(student=owner).values("pk", "handout", "tab")),
    }


def url_for(template: str, ids: dict) -> str:
    names = re.findall(r"{(\w+)}", template)
    missing = [n for n in names if n not in ids]
    assert not missing, f"{template}: give this suite an id of the first student for {missing}"
    return "/" + template.format(**ids)


def body_with_ids(ids: dict, api: bool) -> dict:
    """A POST body naming the first student's things in every field a form or the API reads."""
    fields = {"graph": ids["pk"], "_tab": ids["tab_id"], "tab": ids["tab_id"], "run": str(ids["run_id"]),
              "node": ids["node_id"], "source": ids["node_id"], "target": ids["node_id"],
              "source_port": "output", "target_port": "tensor", "node_id": ids["node_id"], "port": "output",
              "confirm": "yes", "title": "renamed", "label": "renamed", "example": "walkthrough"}
    return {"data": json.dumps(fields), "content_type": "application/json"} if api else {"data": fields}


def is_login_page(response, path: str) -> bool:
    """The answer is, or sends to, a login page (the site's or the admin's)."""
    logins = (reverse(settings.LOGIN_URL), reverse("admin:login"))
    if response.status_code in (301, 302, 303):
        return response["Location"].split("?")[0] in logins
    return response.status_code == 200 and path in logins


METHODS = ("get", "post", "put", "delete")


def ask(client: Client, method: str, url: str, ids: dict):
    if method in ("post", "put"):
        return getattr(client, method)(url, **body_with_ids(ids, url.startswith("/api/")))
    query = {"run": str(ids["run_id"]), "node": ids["node_id"], "node_id": ids["node_id"], "port": "output"}
    return getattr(client, method)(url, query if method == "get" else None)


def assert_shows_nothing_of_theirs(response, what: str) -> None:
    shown = response.content.decode(errors="replace") + "".join(f"{k}: {v}" for k, v in response.items())
    assert MARKER not in shown, f"{what} shows the first student's things"
    assert response.status_code < 500, f"{what} answered {response.status_code}"


@pytest.mark.django_db
@pytest.mark.parametrize("template, view", HTTP_ROUTES, ids=[t or "/" for t, _ in HTTP_ROUTES])
def test_a_stranger_and_a_visitor_get_nothing_of_the_first_students(template, view, theirs, other, fresh_store):
    ids = theirs["ids"]
    url = url_for(template, ids)
    assert resolve(url.split("?")[0]).func == view, f"{url} does not reach the route {template}"
    takes_ids = "{" in template
    for method in METHODS:
        visitor = ask(Client(), method, url, ids)
        what = f"{method.upper()} {url} by a visitor"
        assert_shows_nothing_of_theirs(visitor, what)
        assert visitor.status_code in (401, 404, 405) or is_login_page(visitor, url), \
            f"{what} answered {visitor.status_code}"
        stranger = Client()
        stranger.force_login(other)
        answer = ask(stranger, method, url, ids)
        what = f"{method.upper()} {url} by another student"
        assert_shows_nothing_of_theirs(answer, what)
        if takes_ids:  # a route about one of the first student's things: it does not exist for others
            assert answer.status_code in (404, 405) or is_login_page(answer, url), \
                f"{what} answered {answer.status_code}"
    assert snapshot(theirs["graph"].owner, fresh_store, theirs["run"]) == theirs["snapshot"], \
        f"a request to {template} changed the first student's things"


@pytest.mark.django_db
@pytest.mark.parametrize("template, view", HTTP_ROUTES, ids=[t or "/" for t, _ in HTTP_ROUTES])
def test_a_teacher_of_another_class_gets_nothing_of_the_first_students(template, view, theirs, other_teacher,
                                                                       fresh_store):
    ids = theirs["ids"]
    url = url_for(template, ids)
    for method in METHODS:
        teacher = Client()   # a fresh one each time: POST /logout/ would end the session
        teacher.force_login(other_teacher)
        answer = ask(teacher, method, url, ids)
        what = f"{method.upper()} {url} by a teacher of another class"
        assert_shows_nothing_of_theirs(answer, what)
        if "{" in template:
            assert answer.status_code in (404, 405) or is_login_page(answer, url), \
                f"{what} answered {answer.status_code}"
    assert snapshot(theirs["graph"].owner, fresh_store, theirs["run"]) == theirs["snapshot"], \
        f"a request to {template} by another class's teacher changed the first student's things"


# The class pages act on a class's students by design (a password reset, a hand-out): their
# own tests say what each changes. Everywhere else a teacher reads and never writes.
TEACHERS_OWN = "classes/{class_id}"


@pytest.mark.django_db
@pytest.mark.parametrize("template, view", [r for r in HTTP_ROUTES if not r[0].startswith(TEACHERS_OWN)],
                         ids=[t or "/" for t, _ in HTTP_ROUTES if not t.startswith(TEACHERS_OWN)])
def test_the_students_own_teacher_reads_and_changes_nothing(template, view, theirs, own_teacher, fresh_store):
    ids = theirs["ids"]
    url = url_for(template, ids)
    for method in METHODS:
        teacher = Client()
        teacher.force_login(own_teacher)
        answer = ask(teacher, method, url, ids)
        what = f"{method.upper()} {url} by the student's own teacher"
        assert answer.status_code < 500, f"{what} answered {answer.status_code}"
        if method != "get" and "{" in template:   # every write to the student's things is refused
            assert answer.status_code in (403, 404, 405) or is_login_page(answer, url), \
                f"{what} answered {answer.status_code}"
    assert snapshot(theirs["graph"].owner, fresh_store, theirs["run"]) == theirs["snapshot"], \
        f"a request to {template} by the student's teacher changed the student's things"


@pytest.mark.django_db
@pytest.mark.parametrize("template, view", HTTP_ROUTES, ids=[t or "/" for t, _ in HTTP_ROUTES])
def test_every_post_and_delete_without_a_csrf_token_is_refused(template, view, theirs, owner, fresh_store):
    ids = theirs["ids"]
    url = url_for(template, ids)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    for method in ("post", "delete"):
        answer = ask(browser, method, url, ids)
        assert answer.status_code in (403, 405), f"{method.upper()} {url} without a CSRF token answered {answer.status_code}"
    assert snapshot(owner, fresh_store, theirs["run"]) == theirs["snapshot"]


def test_the_suite_walks_every_kind_of_route():
    """The walk reaches the editor, the API, the admin and the login (a resolver it could not
    read would make every test above pass on nothing)."""
    templates = [t for t, _ in HTTP_ROUTES]
    for expected in ("editor/{tab_id}/nodes/add", "api/runs/{run_id}", "admin/", "login/", "classes/{class_id}/",
                     "api/classes/{class_id}",
                     "editor/{tab_id}/segments/{segment_id}/remove", "editor/{tab_id}/edges/{edge_id}/delete"):
        assert expected in templates
    assert len(templates) > 60 and SOCKET_ROUTES


# -- WebSockets ---------------------------------------------------------------------------------

@pytest.fixture
def fresh_channel_layer():
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


async def connects(user, path: str, origin: str = "http://testserver") -> bool:
    communicator = WebsocketCommunicator(same_origin(URLRouter(websocket_urlpatterns)), path,
                                         headers=[(b"host", b"testserver"), (b"origin", origin.encode())])
    communicator.scope["user"] = user
    connected, _ = await communicator.connect(timeout=5)
    if connected:
        await communicator.disconnect()
    return connected


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("template", SOCKET_ROUTES)
async def test_every_socket_refuses_a_stranger_a_visitor_and_a_foreign_origin(template, theirs, owner, other,
                                                                              own_teacher, other_teacher,
                                                                              fresh_channel_layer):
    from django.contrib.auth.models import AnonymousUser
    path = url_for(template, theirs["ids"])
    # the owner, from a page of this server (a class's socket: its teacher; they also follow a student's run)
    insider = own_teacher if template.startswith("ws/classes/") else owner
    assert await connects(insider, path)
    assert await connects(own_teacher, path)
    assert not await connects(other, path)
    assert not await connects(other_teacher, path)
    assert not await connects(AnonymousUser(), path)
    for origin in ("http://testserver:8001", "https://testserver", "http://evil.example", "null"):
        assert not await connects(insider, path, origin), origin
