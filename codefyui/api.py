"""The small frame every JSON endpoint shares: authentication by session or API token,
CSRF for browser sessions, a parsed JSON body, and errors as JSON, never a traceback page."""
from __future__ import annotations

import functools
from typing import Any, Callable

import orjson
from django.contrib.auth import authenticate
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt


class ApiError(Exception):
    def __init__(self, status: int, detail: str | list[str]):
        self.status, self.detail = status, detail


def json_response(data: Any, status: int = 200) -> HttpResponse:
    body = orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    return HttpResponse(body, status=status, content_type="application/json")


def error_response(status: int, detail: str | list[str]) -> HttpResponse:
    if isinstance(detail, list):
        return json_response({"detail": "; ".join(detail), "problems": detail}, status)
    return json_response({"detail": detail}, status)


def json_body(request: HttpRequest) -> Any:
    try:
        return orjson.loads(request.body or b"null")
    except orjson.JSONDecodeError as exc:
        raise ApiError(400, f"The request body is not valid JSON: {exc}") from None


def _token_user(request: HttpRequest):
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer "):
        return None
    return authenticate(request, api_token=header[7:].strip())  # apps.accounts.backends


def api(*methods: str) -> Callable:
    """Decorate a JSON endpoint that answers the given HTTP methods."""

    def decorate(view: Callable) -> Callable:
        @login_not_required
        @csrf_exempt
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method not in methods:
                return error_response(405, f"Use {' or '.join(methods)} here")
            if "Authorization" in request.headers:
                user = _token_user(request)
                if user is None:
                    return error_response(401, "Invalid API token")
                request.user = user
            elif not request.user.is_authenticated:
                return error_response(401, "Log in or send 'Authorization: Bearer <token>'")
            elif request.method not in ("GET", "HEAD", "OPTIONS"):
                refused = CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})
                if refused is not None:
                    return error_response(403, "CSRF check failed: send the X-CSRFToken header")
            try:
                return view(request, *args, **kwargs)
            except ApiError as exc:
                return error_response(exc.status, exc.detail)
            except Http404:
                return error_response(404, "Not found")

        return wrapper

    return decorate
