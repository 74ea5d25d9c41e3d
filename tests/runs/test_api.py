"""The JSON API: graphs, runs, cancel, delete, health; session or token; owners only."""
from __future__ import annotations

import json

import pytest
from cachetools import FIFOCache, TTLCache
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.graphs import document
from apps.graphs.models import Graph
from apps.runs import api, housekeeping, service
from apps.accounts.models import ApiToken
from apps.runs.models import Run

pytestmark = pytest.mark.django_db(transaction=True)


def post(client, url, data, **extra):
    return client.post(url, json.dumps(data), content_type="application/json", **extra)


def put(client, url, data):
    return client.put(url, json.dumps(data), content_type="application/json")


@pytest.fixture
def graph(student, walkthrough):
    return Graph.objects.create(owner=student, name="walk", document=walkthrough)


def test_the_api_needs_a_login_or_a_token(client):
    response = client.get("/api/graphs")
    assert response.status_code == 401
    assert "Bearer" in response.json()["detail"]


def test_a_bearer_token_authenticates(client, student, graph, capsys):
    call_command("issuetoken", "ada")
    token = capsys.readouterr().out.strip()
    response = client.get("/api/graphs", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200 and [g["name"] for g in response.json()] == ["walk"]
    assert ApiToken.objects.get(user=student).digest != token  # only the hash is stored
    assert client.get("/api/graphs", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401


def test_a_token_is_read_in_one_query_and_finds_its_own_user(student, stranger):
    from apps.accounts import backends
    tokens = {user.username: ApiToken.issue(user) for user in (student, stranger)}
    backends._remembered.clear()
    with CaptureQueriesContext(connection) as queries:
        found = {name: backends.ApiTokenBackend().authenticate(None, api_token=token) for name, token in tokens.items()}
    assert {name: user.username for name, user in found.items()} == {"ada": "ada", stranger.username: stranger.username}
    assert len(queries) == 2 and found["ada"].pk == student.pk and found["ada"].is_active
    assert backends.ApiTokenBackend().authenticate(None, api_token="not a token") is None


def test_a_replaced_token_or_a_deactivated_user_is_refused_at_once(client, student):
    """A token's user is remembered between requests, but never past a change to either."""
    old = ApiToken.issue(student)
    assert client.get("/api/graphs", HTTP_AUTHORIZATION=f"Bearer {old}").status_code == 200
    new = ApiToken.issue(student)
    assert client.get("/api/graphs", HTTP_AUTHORIZATION=f"Bearer {old}").status_code == 401
    assert client.get("/api/graphs", HTTP_AUTHORIZATION=f"Bearer {new}").status_code == 200
    student.is_active = False
    student.save()
    assert client.get("/api/graphs", HTTP_AUTHORIZATION=f"Bearer {new}").status_code == 401


def test_another_students_change_keeps_this_students_token_remembered(client, student, stranger):
    """A login saves the user: only that user's remembered tokens are forgotten, not the class's."""
    from apps.accounts import backends
    token = ApiToken.issue(student)
    assert client.get("/api/graphs", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200
    digest = ApiToken.hash(token)
    assert digest in backends._remembered
    stranger.first_name = "Changed"
    stranger.save()
    ApiToken.issue(stranger)
    assert digest in backends._remembered
    student.save()
    assert digest not in backends._remembered


def test_remembered_tokens_age_out_one_by_one(student, stranger, monkeypatch):
    """Past its bound the least recently used token is forgotten, not every one; past its time
    a token's user is read again."""
    from apps.accounts import backends
    now = [0.0]
    monkeypatch.setattr(backends, "_remembered", TTLCache(maxsize=1, ttl=backends.REMEMBER_S, timer=lambda: now[0]))
    mine, theirs = ApiToken.issue(student), ApiToken.issue(stranger)
    backend = backends.ApiTokenBackend()
    assert backend.authenticate(None, api_token=mine).pk == student.pk and backend.remembered(mine).pk == student.pk
    assert backend.authenticate(None, api_token=theirs).pk == stranger.pk
    assert backend.remembered(mine) is None and backend.remembered(theirs).pk == stranger.pk
    now[0] += backends.REMEMBER_S + 0.1
    assert backend.remembered(theirs) is None
    with CaptureQueriesContext(connection) as queries:
        assert backend.authenticate(None, api_token=theirs).pk == stranger.pk
    assert len(queries) == 1


def test_a_graph_is_created_read_and_listed_for_its_owner_only(student_client, client, stranger, walkthrough):
    created = post(student_client, "/api/graphs", walkthrough)
    assert created.status_code == 201
    graph_id = created.json()["id"]
    assert student_client.get(f"/api/graphs/{graph_id}").json()["document"]["nodes"][1]["id"] == "input"
    client.force_login(stranger)
    assert client.get(f"/api/graphs/{graph_id}").status_code == 404
    assert client.get("/api/graphs").json() == []


def test_put_refuses_a_broken_document_and_keeps_the_stored_one(student_client, graph):
    response = put(student_client, f"/api/graphs/{graph.pk}", {"nodes": [{"id": "x", "type": "Nope"}], "edges": []})
    assert response.status_code == 400
    assert response.json()["problems"] == ["Unknown node type: Nope (x)"]
    graph.refresh_from_db()
    assert len(graph.document["nodes"]) == 5


def test_put_saves_a_valid_document(student_client, graph, walkthrough):
    walkthrough["name"] = "renamed"
    assert put(student_client, f"/api/graphs/{graph.pk}", walkthrough).status_code == 200
    graph.refresh_from_db()
    assert graph.name == "renamed"


def test_a_malformed_body_gets_a_message_not_a_500(student_client):
    response = student_client.post("/api/graphs", "{oops", content_type="application/json")
    assert response.status_code == 400 and "not valid JSON" in response.json()["detail"]


def test_a_run_starts_finishes_and_reports_every_node(student_client, graph):
    response = post(student_client, "/api/runs", {"graph": graph.pk, "options": {"seed": 3}})
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued"
    service.wait_for(body["run_id"])
    run = student_client.get(f"/api/runs/{body['run_id']}").json()
    assert run["status"] == "succeeded", run["error"]
    assert run["device"] == "cpu" and run["options"]["seed"] == 3
    assert {n: s["status"] for n, s in run["nodes"].items()} == dict.fromkeys(
        ["start", "input", "reshape", "softmax", "print"], "completed")
    assert run["nodes"]["reshape"]["summary"]["tensor"]["shape"] == [1, 16]


def test_a_draft_run_is_refused_with_the_seeds_text(student_client, walkthrough):
    """WK5: a graph without a Start trigger is a draft and Run is rejected."""
    walkthrough["edges"] = [e for e in walkthrough["edges"] if e.get("type") != "trigger"]
    response = post(student_client, "/api/runs", {"graph": walkthrough})
    assert response.status_code == 400
    assert response.json()["problems"] == [
        "No entry points defined. Add a Start node from the palette (drag it onto the canvas or press its button) "
        "and connect it to the node you want to start execution from."]
    assert not Run.objects.exists()


def test_bad_run_options_are_refused(student_client, graph):
    response = post(student_client, "/api/runs", {"graph": graph.pk, "options": {"seed": "x", "warp": True}})
    assert response.status_code == 400
    assert set(response.json()["problems"]) == {"seed must be a whole number or blank, not 'x'",
                                                "Unknown run option 'warp'; a run takes record, verbose, gradients, "
                                                "auto_loss, seed, deterministic, device, persist_weights"}


def test_a_scripts_flood_of_options_is_refused_in_a_few_words(student_client, graph):
    """Thousands of unknown options, a pasted wall of text for a name or a device: one short
    problem each, nothing echoed whole, no run."""
    options = {"x" * 5000: 1, **{f"k{i}": 1 for i in range(3000)}, "device": "cuda" * 2500}
    response = post(student_client, "/api/runs", {"graph": graph.pk, "options": options})
    assert response.status_code == 400 and len(response.content) < 1000
    assert response.json()["problems"] == [
        f"Unknown run options '{'x' * 40}', 'k0', 'k1' and 2,998 more; a run takes record, verbose, gradients, "
        "auto_loss, seed, deterministic, device, persist_weights",
        "device must be auto, cpu, cuda, cuda:0 (or another GPU's number) or mps"]
    assert not Run.objects.exists()


@pytest.mark.parametrize("device", ["auto", "CPU", " cuda ", "cuda:1", "mps"])
def test_a_device_a_server_may_have_is_taken(student_client, graph, device):
    response = post(student_client, "/api/runs", {"graph": graph.pk, "options": {"device": device}})
    assert response.status_code == 202
    assert Run.objects.get().options["device"] == device.strip().lower()


@pytest.mark.parametrize("seed", ["9" * 5000, "²", 10**19])
def test_a_seed_no_one_could_mean_is_refused(student_client, graph, seed):
    response = post(student_client, "/api/runs", {"graph": graph.pk, "options": {"seed": seed}})
    assert response.status_code == 400 and response.json()["problems"][0].startswith("seed must be a whole number")
    assert not Run.objects.exists()


def test_a_strangers_run_answers_404(student_client, client, stranger, graph):
    run_id = post(student_client, "/api/runs", {"graph": graph.pk}).json()["run_id"]
    service.wait_for(run_id)
    client.force_login(stranger)
    assert client.get(f"/api/runs/{run_id}").status_code == 404
    assert post(client, f"/api/runs/{run_id}/cancel", {}).status_code == 404
    assert client.delete(f"/api/runs/{run_id}").status_code == 404
    assert client.get("/api/runs/not-a-uuid").status_code == 404
    assert post(client, "/api/runs", {"graph": graph.pk}).status_code == 404


def run_reads(client, run_id) -> tuple[dict, int]:
    """GET /api/runs/{id}'s answer, and how many queries of that request read the runs table."""
    with CaptureQueriesContext(connection) as queries:
        answer = client.get(f"/api/runs/{run_id}").json()
    return answer, sum('"runs_run"' in q["sql"] for q in queries.captured_queries)


def test_a_run_this_server_ended_is_answered_without_reading_its_row(student_client, graph, monkeypatch):
    """What ?wait= answers most often: the row this process wrote last, kept in memory for the
    last ENDED_KEPT runs; the same answer as the row, and gone once the row is deleted."""
    monkeypatch.setattr(service._runs, "ended", FIFOCache(maxsize=1))   # the last ENDED_KEPT: here 1
    first, second = (post(student_client, "/api/runs", {"graph": graph.pk}).json()["run_id"] for _ in range(2))
    service.wait_for(first)
    service.wait_for(second)
    answer, reads = run_reads(student_client, second)
    assert reads == 0 and answer == api.run_json(Run.objects.get(pk=second))
    assert answer["status"] == "succeeded" and len(answer["nodes"]) == 5 and answer["log"]
    assert run_reads(student_client, first)[1] == 1   # past the last ENDED_KEPT: read from its row
    Run.objects.filter(pk=second).delete()            # as the admin would
    assert student_client.get(f"/api/runs/{second}").status_code == 404


def test_deleting_a_finished_run_drops_its_captures(student_client, graph, fresh_store):
    """ST3: deleting a run drops its captures."""
    run_id = post(student_client, "/api/runs", {"graph": graph.pk}).json()["run_id"]
    service.wait_for(run_id)
    assert fresh_store.has_run(run_id)
    assert student_client.delete(f"/api/runs/{run_id}").status_code == 204
    assert not fresh_store.has_run(run_id) and not Run.objects.filter(pk=run_id).exists()


def test_an_unfinished_run_cannot_be_deleted_but_can_be_cancelled(student_client, student):
    run = Run.objects.create(owner=student, status=Run.Status.QUEUED)
    assert student_client.delete(f"/api/runs/{run.pk}").status_code == 409
    response = post(student_client, f"/api/runs/{run.pk}/cancel", {})
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert post(student_client, f"/api/runs/{run.pk}/cancel", {}).status_code == 409


def test_runs_left_running_by_a_restart_are_marked_interrupted(student):
    run = Run.objects.create(owner=student, status=Run.Status.RUNNING, nodes={
        "done": {"status": "completed"}, "busy": {"status": "running"}})
    assert housekeeping.mark_interrupted_runs() == 1
    run.refresh_from_db()
    assert run.status == "interrupted"
    assert run.nodes == {"done": {"status": "completed"}, "busy": {"status": "interrupted"}}


def test_health_reports_version_nodes_and_store_usage(student_client):
    body = student_client.get("/api/health").json()
    assert body["version"] and body["nodes"] >= 39
    usage = body["stores"]["run_output_store"]
    assert usage["max_runs"] == 20 and usage["max_bytes"] == 2048 * 2**20


def test_session_posts_need_the_csrf_token(student):
    from django.test import Client
    client = Client(enforce_csrf_checks=True)
    client.force_login(student)
    assert post(client, "/api/graphs", {"nodes": [], "edges": []}).status_code == 403


async def asgi_exchange(path: str, token: str, method: str = "GET", data: dict | None = None,
                        host: bytes = b"127.0.0.1") -> tuple[dict, bytes]:
    """A request through the server's ASGI stack for ?wait= (not the test client's WSGI one):
    the answer's start message and its body."""
    from asgiref.testing import ApplicationCommunicator

    from apps.runs.api import wait_for_runs
    from codefyui.handler import SyncStackASGIHandler
    route, _, query = path.partition("?")
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": route, "raw_path": route.encode(), "query_string": query.encode(), "root_path": "",
             "headers": [(b"host", host), (b"authorization", f"Bearer {token}".encode()),
                         (b"content-type", b"application/json")],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    instance = ApplicationCommunicator(wait_for_runs(SyncStackASGIHandler()), scope)
    await instance.send_input({"type": "http.request", "body": json.dumps(data).encode() if data is not None else b""})
    start = await instance.receive_output(40)
    body = await instance.receive_output(40)
    return start, body["body"]


async def asgi_request(path: str, token: str, method: str = "GET", data: dict | None = None) -> tuple[int, dict]:
    start, body = await asgi_exchange(path, token, method, data)
    return start["status"], json.loads(body)


@pytest.mark.asyncio
async def test_wait_answers_as_soon_as_the_run_ends_or_after_the_seconds_asked(student, tmp_path):
    """GET /api/runs/{id}?wait=S waits on the event loop, not on the one request thread."""
    import asyncio

    from asgiref.sync import sync_to_async

    from tests.runs.worker_nodes import graph
    token = await sync_to_async(ApiToken.issue)(student)
    held = tmp_path / "held"
    run = await sync_to_async(service.start_run)(student, document.normalise(graph("test:Hold", path=str(held))))
    status, body = await asgi_request(f"/api/runs/{run.pk}?wait=0.2", token)  # the run still holds
    assert status == 200 and body["status"] in ("queued", "running")
    waiting = asyncio.ensure_future(asgi_request(f"/api/runs/{run.pk}?wait=25", token))
    status, body = await asgi_request("/api/health", token)  # another request is served meanwhile
    assert status == 200 and not waiting.done()
    (tmp_path / "held.go").touch()
    status, body = await waiting
    assert status == 200 and body["status"] == "succeeded" and body["nodes"]["node"]["status"] == "completed"
    status, body = await asgi_request(f"/api/runs/{run.pk}?wait=soon", token)
    assert status == 400 and body["detail"] == "wait must be a number of seconds from 0 to 30"


@pytest.mark.asyncio
async def test_a_script_submits_a_run_and_reads_its_end_in_one_request(student, tmp_path):
    """POST /api/runs?wait=S answers, once the run ends or S seconds pass, what GET
    /api/runs/{id} answers then; it waits on the event loop too."""
    import asyncio

    from asgiref.sync import sync_to_async

    from tests.runs.worker_nodes import graph
    token = await sync_to_async(ApiToken.issue)(student)
    held = graph("test:Hold", path=str(tmp_path / "held"))
    waiting = asyncio.ensure_future(asgi_request("/api/runs?wait=25", token, "POST", {"graph": held}))
    status, body = await asgi_request("/api/health", token)   # another request is served meanwhile
    assert status == 200 and not waiting.done()
    (tmp_path / "held.go").touch()
    status, body = await waiting
    assert status == 200 and body["status"] == "succeeded" and body["nodes"]["node"]["status"] == "completed"
    assert body["log"][-1]["text"] == "Execution completed successfully"

    status, body = await asgi_request("/api/runs?wait=0.2", token, "POST", {"graph": graph("test:Hold", path=str(tmp_path / "h2"))})
    assert status == 200 and body["status"] in ("queued", "running")   # its state after 0.2 s
    (tmp_path / "h2.go").touch()
    await sync_to_async(service.wait_for)(body["run_id"])

    runs = await sync_to_async(Run.objects.count)()
    status, body = await asgi_request("/api/runs?wait=soon", token, "POST", {"graph": held})
    assert status == 400 and body["detail"] == "wait must be a number of seconds from 0 to 30"
    status, body = await asgi_request("/api/runs?wait=5", token, "POST", {"graph": {"nodes": "no"}})
    assert status == 400   # refused at once, as without ?wait
    assert await sync_to_async(Run.objects.count)() == runs   # neither started a run


@pytest.mark.asyncio
async def test_an_ended_runs_wait_is_answered_on_the_event_loop_as_the_view_answers_it(student, stranger, graph,
                                                                                       monkeypatch):
    """?wait= on a run that has ended, with a token this process remembers, is answered
    without a turn on the request thread: the view's status, headers and body, through the
    token API's own middleware (its host check included). Anything else is the view's."""
    from asgiref.sync import sync_to_async

    from apps.accounts import backends
    from codefyui.handler import SyncStackASGIHandler

    token, strangers = [await sync_to_async(ApiToken.issue)(user) for user in (student, stranger)]
    backends._remembered.clear()
    run = await sync_to_async(service.start_run)(student, graph.document, graph=graph)
    await sync_to_async(service.wait_for)(run.pk)
    by_view = await asgi_exchange(f"/api/runs/{run.pk}", token)   # no wait: the view answers (and the token is remembered)
    turns = []
    respond = SyncStackASGIHandler._respond
    monkeypatch.setattr(SyncStackASGIHandler, "_respond", lambda *args, **kw: turns.append(args[1]["path"]) or respond(*args, **kw))

    start, body = await asgi_exchange(f"/api/runs/{run.pk}?wait=5", token)
    assert (start, body) == by_view and not turns
    assert json.loads(body)["status"] == "succeeded"
    assert dict(start["headers"])[b"X-Frame-Options"] == b"DENY"   # the middleware's own header
    start, _ = await asgi_exchange(f"/api/runs/{run.pk}?wait=5", token, host=b"evil.example")
    assert start["status"] == 400 and not turns                      # ALLOWED_HOSTS, as the view's would be
    status, body = await asgi_request("/api/runs?wait=5", token, "POST", {"graph": graph.pk})
    assert status == 200 and body["status"] == "succeeded" and turns == ["/api/runs"]   # the submit only

    await asgi_exchange("/api/graphs", strangers)                    # the stranger's token is remembered too
    status, body = await asgi_request(f"/api/runs/{run.pk}?wait=5", strangers)
    assert status == 404 and turns[-1] == f"/api/runs/{run.pk}"     # not theirs: the view says so
    backends._remembered.clear()
    assert await asgi_exchange(f"/api/runs/{run.pk}?wait=5", token) == by_view   # a token not remembered: the view
    assert turns[-1] == f"/api/runs/{run.pk}"


def test_stopping_a_queued_run_takes_it_out_of_the_queue(student, tmp_path):
    from tests.runs.worker_nodes import graph
    held = service.start_run(student, document.normalise(graph("test:Hold", path=str(tmp_path / "held"))))
    waiting = service.start_run(student, document.normalise(graph("test:Hold", path=str(tmp_path / "held"))))
    assert service.queue_place(waiting) == 1
    stopped = service.cancel_run(waiting)
    assert stopped.status == "cancelled" and stopped.error == "Execution cancelled"
    assert service.queue_place(waiting) is None
    (tmp_path / "held.go").touch()
    assert service.wait_for(held.pk).status == "succeeded"


def test_a_run_past_the_capture_budget_says_so_once_in_its_log(student):
    """Captures cross from the run's worker to the server's store; its refusal reaches the run log."""
    from apps.runs.store import MemoryCaptureStore, set_store
    set_store(MemoryCaptureStore(max_bytes=2**20))
    nodes = [{"id": "start", "type": "Start"}] + [
        {"id": f"big{i}", "type": "TensorCreate", "data": {"params": {"shape": "512,1024", "fill": "ones"}}} for i in range(2)]
    edges = [{"id": f"t{i}", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": f"big{i}"}
             for i in range(2)]
    run = service.wait_for(service.start_run(student, document.normalise({"nodes": nodes, "edges": edges})).pk)
    assert run.status == "succeeded", run.error
    stopped = [e["text"] for e in run.log if e["text"].startswith("Recording stopped after")]
    assert stopped == ["Recording stopped after 0 MB: this run's outputs are larger than the capture store's budget "
                       "(CODEFYUI_RUN_OUTPUT_STORE_MAX_MB)"]
