"""POST /api/runs[?wait=S], GET/DELETE /api/runs/{id}[?wait=S], POST /api/runs/{id}/cancel."""
from __future__ import annotations

import json
import math
import re
from urllib.parse import parse_qs
from uuid import UUID

from django.http import HttpRequest, HttpResponse

from apps.graphs import document
from apps.graphs.models import Graph
from codefyui.access import get_readable, get_visible, note_look
from codefyui.api import ApiError, api, json_body, json_response, remembered_token_user

from . import service
from .models import Run


MAX_WAIT_S = 30
_RUN_PATH = re.compile(r"/api/runs/([0-9a-fA-F-]{32,36})")


def wait_seconds(raw: str | None) -> float:
    """What ``?wait=`` asks for: seconds, at most 30. Raises ValueError for anything else."""
    if raw is None:
        return 0.0
    seconds = float(raw)
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(raw)
    return min(seconds, MAX_WAIT_S)


def wait_for_runs(app):
    """ASGI middleware for ``GET /api/runs/{id}?wait=S``: it waits on the event loop, holding
    no thread, until the run ends or S seconds pass, then answers with the run's state then
    (every sync view shares one thread: a wait there would stall every student): itself for
    a run that has ended (``_answer_ended``), else through the view. The view decides who may
    see the run and answers a malformed wait; a run id is a random UUID, so a wait on an id
    one does not own only delays one's own 404.

    ``POST /api/runs?wait=S`` submits the run as without it and, once it is accepted, answers
    the same way, what ``GET /api/runs/{id}`` answers then: a script runs a graph and reads
    its end in one request (each request costs the server as much as a small run)."""

    async def middleware(scope, receive, send):
        if scope["type"] == "http":
            if scope["method"] == "POST" and scope["path"] == "/api/runs" and (seconds := _wait(scope)):
                return await _submit_and_wait(app, scope, receive, send, seconds)
            if scope["method"] == "GET" and (match := _RUN_PATH.fullmatch(scope["path"])) and (seconds := _wait(scope)):
                await service.until_finished(match[1], seconds)
                if await _answer_ended(app, scope, match[1], send):
                    return
        await app(scope, receive, send)

    return middleware


def _wait(scope) -> float:
    """The seconds a request's ``?wait=`` asks for; 0 when it asks none, or nothing a view accepts (the view says so)."""
    raw = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("wait")
    try:
        return wait_seconds(raw[0]) if raw else 0.0
    except ValueError:
        return 0.0


async def _submit_and_wait(app, scope, receive, send, seconds: float) -> None:
    """POST /api/runs?wait=S: the view's answer is kept; a run it accepted is waited for, and
    GET /api/runs/{id} answers in its place (its owner's, with the same credentials)."""
    answer: list[dict] = []

    async def keep(message: dict) -> None:
        answer.append(message)

    await app(scope, receive, keep)
    if answer[0]["status"] != 202:   # refused: the view's own answer
        for message in answer:
            await send(message)
        return
    run_id = json.loads(b"".join(m.get("body", b"") for m in answer[1:]))["run_id"]
    await service.until_finished(run_id, seconds)
    path = f"/api/runs/{run_id}"
    scope = {**scope, "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b""}
    if await _answer_ended(app, scope, run_id, send):
        return

    async def no_body() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    await app(scope, no_body, send)


async def _answer_ended(app, scope, run_id: str, send) -> bool:
    """Answer ``GET /api/runs/{id}`` here, on the event loop, for a run that has ended when
    this process remembers both the run (``service.ended_run``) and the request's token: the
    view's answer, sent through the token API's own middleware, without a turn on the request
    thread (the view's turn was a sixth of the server's CPU per run of a class's burst,
    bench/class_burst.py). False for anything else: the view answers it."""
    user = remembered_token_user(scope)
    run = service.ended_run(user, run_id) if user is not None else None
    if run is None or not run.is_finished:
        return False
    await app.send_made_answer(scope, send, json_response(run_json(run)))
    return True


def run_json(run: Run) -> dict:
    run = service.current(run)
    queued = service.queue_place(run) if run.status == Run.Status.QUEUED else None
    return {
        "run_id": str(run.id), "status": run.status, "graph": run.graph_id, "graph_name": run.graph_name,
        "options": run.options, "device": run.device, "error": run.error or None,
        "created": run.created.isoformat(),
        "started": run.started.isoformat() if run.started else None,
        "finished": run.finished.isoformat() if run.finished else None,
        "duration": run.duration, "queue_place": queued, "nodes": run.nodes, "log": run.log,
    }


@api("POST")
def runs(request: HttpRequest) -> HttpResponse:
    """Submit a run: 202 with its id; with ``?wait=S``, the run's state once it ends or S
    seconds pass (``wait_for_runs``)."""
    _check_wait(request)
    body = json_body(request)
    if not isinstance(body, dict) or "graph" not in body:
        raise ApiError(400, "Send {\"graph\": <graph id or graph document>, \"options\": {...}}")
    graph, source = None, body["graph"]
    if isinstance(source, dict):
        try:
            doc = document.normalised(source)
        except document.DocumentError as exc:
            raise ApiError(400, exc.problems) from None
    else:
        graph = get_visible(Graph.objects, request.user, source)
        doc = graph.document
    options = body.get("options") or {}
    if not isinstance(options, dict):
        raise ApiError(400, "options must be an object")
    try:
        run = service.start_run(request.user, doc, graph=graph, overrides=options)
    except service.RunRefused as exc:
        raise ApiError(400, exc.problems) from None
    return json_response({"run_id": str(run.id), "status": run.status}, status=202)


@api("GET", "DELETE")
def run_detail(request: HttpRequest, run_id: UUID) -> HttpResponse:
    reads = request.method == "GET"   # a teacher reads a student's run too (audit-logged); DELETE is the owner's
    run = service.known_run(request.user, run_id) or (get_readable if reads else get_visible)(
        Run.objects, request.user, run_id)
    if reads:
        note_look(request, run.owner_id, "run", run.pk)
    if request.method == "DELETE":
        try:
            service.delete_run(run)
        except service.RunConflict as exc:
            raise ApiError(409, str(exc)) from None
        return HttpResponse(status=204)
    _check_wait(request)   # the waiting itself happened before the view (wait_for_runs)
    return json_response(run_json(run))


def _check_wait(request: HttpRequest) -> None:
    try:
        wait_seconds(request.GET.get("wait"))
    except ValueError:
        raise ApiError(400, f"wait must be a number of seconds from 0 to {MAX_WAIT_S}") from None


@api("POST")
def run_cancel(request: HttpRequest, run_id: UUID) -> HttpResponse:
    run = get_visible(Run.objects, request.user, run_id)
    try:
        run = service.cancel_run(run)
    except service.RunConflict as exc:
        raise ApiError(409, str(exc)) from None
    return json_response({"run_id": str(run.id), "status": run.status})
