"""The small frame every JSON endpoint shares: authentication by session or API token,
CSRF for browser sessions, a parsed JSON body, and errors as JSON, never a traceback page."""
from __future__ import annotations

import functools
from typing import Any, Callable

import orjson
from django.conf import settings
from django.contrib.auth import authenticate, load_backend
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404, HttpRequest, HttpResponse
from django.views import defaults
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt


class ApiError(Exception):
    def __init__(self, status: int, detail: str | list[str]):
        self.status, self.detail = status, detail


# An API's answer loads nothing and may be framed by nothing (the pages' policy, settings.py,
# is for documents; django-csp leaves a response's own header as it is).
JSON_POLICY = "default-src 'none'; frame-ancestors 'none'"


def json_response(data: Any, status: int = 200) -> HttpResponse:
    body = orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    response = HttpResponse(body, status=status, content_type="application/json")
    response["Content-Security-Policy"] = JSON_POLICY
    return response


def error_response(status: int, detail: str | list[str]) -> HttpResponse:
    if isinstance(detail, list):
        return json_response({"detail": "; ".join(detail), "problems": detail}, status)
    return json_response({"detail": detail}, status)


def json_body(request: HttpRequest) -> Any:
    try:
        return orjson.loads(request.body or b"null")
    except orjson.JSONDecodeError as exc:
        raise ApiError(400, f"The request body is not valid JSON: {exc}") from None


@functools.cache
def token_backend():
    """The API token's backend (``settings.API_TOKEN_BACKEND``), loaded once."""
    return load_backend(settings.API_TOKEN_BACKEND)


def _bearer(header: str) -> str | None:
    """The token an Authorization header carries, or None."""
    return header[7:].strip() if header.startswith("Bearer ") else None


def _token_user(request: HttpRequest):
    """The token's user, or None. A valid token needs only its backend: ``authenticate`` would
    first bind every backend's signature, a twentieth of a small request's time. A wrong one
    goes through ``authenticate``, where axes counts it and answers a lockout."""
    token = _bearer(request.headers.get("Authorization", ""))
    if token is None:
        return None
    return token_backend().authenticate(request, api_token=token) or authenticate(request, api_token=token)


def remembered_token_user(scope):
    """The user of an ASGI request's API token when the token backend remembers it from an
    earlier request, else None (then only a view can tell). Reads no database: for the event loop."""
    header = next((value for name, value in scope["headers"] if name == b"authorization"), b"")
    token = _bearer(header.decode("latin-1"))
    return token_backend().remembered(token) if token else None


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
            try:
                if request.method not in ("GET", "HEAD", "OPTIONS") and "Authorization" not in request.headers:
                    refused = CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})
                    if refused is not None:
                        return error_response(403, "CSRF check failed: send the X-CSRFToken header")
                return view(request, *args, **kwargs)
            except ApiError as exc:
                return error_response(exc.status, exc.detail)
            except Http404:
                return error_response(404, "Not found")
            except RequestDataTooBig:
                return error_response(413, f"The request body is larger than "
                                           f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 2**20} MB")
            except (TooManyFieldsSent, TooManyFilesSent) as exc:
                return error_response(400, str(exc))

        wrapper.api_methods = methods   # what marks an endpoint (tests/test_security.py checks every /api/ route)
        return wrapper

    return decorate


# The project's error pages (codefyui/urls.py): under /api/ they answer JSON like the
# endpoints, elsewhere Django's templates (404.html, 500.html).

def _json_under_api(page: Callable, status: int, detail: str) -> Callable:
    def handler(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.path.startswith("/api/"):
            return error_response(status, detail)
        return page(request, *args, **kwargs)
    return handler


bad_request = _json_under_api(defaults.bad_request, 400, "Bad request")
permission_denied = _json_under_api(defaults.permission_denied, 403, "Forbidden")
page_not_found = _json_under_api(defaults.page_not_found, 404, "Not found")
server_error = _json_under_api(defaults.server_error, 500, "Server error")
