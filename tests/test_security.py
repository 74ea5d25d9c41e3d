"""A school server's defaults: login throttling (django-axes), sessions that end with the
browser, CODEFYUI_HTTPS, one spelling of a run id in URLs, and JSON answers from the API
whatever goes wrong."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.backends import ModelBackend
from django.test import Client

from apps.accounts.models import ApiToken
from apps.runs.models import Run

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent


def log_in(client, username, password, address="10.0.0.7"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


# -- login throttling ---------------------------------------------------------------------

def test_five_wrong_passwords_pause_the_account_on_that_computer_before_any_hashing(client, student, monkeypatch):
    for _ in range(4):
        assert log_in(client, "ada", "guess").status_code == 200  # the form again, with its error
    locked = log_in(client, "ada", "guess")
    assert locked.status_code == 429
    body = " ".join(locked.content.decode().split())
    assert "The account <strong>ada</strong> is paused for 15 minutes" in body and "Ask your teacher" in body
    hashed = []
    monkeypatch.setattr(ModelBackend, "authenticate", lambda *a, **k: hashed.append(1))
    again = log_in(Client(), "ada", "pw-ada-123")  # the right password, the same PC
    assert again.status_code == 429 and hashed == []  # refused before any password is hashed
    assert "_auth_user_id" not in again.client.session
    # tests/test_login_lockout.py: everyone else, the address's own limit, the wait, the proxy


def test_behind_a_listed_proxy_failures_count_per_address_the_proxy_saw(client, student, stranger, monkeypatch):
    import ipaddress
    from codefyui import conf
    monkeypatch.setattr(conf, "HTTPS", True)
    monkeypatch.setattr(conf, "TRUSTED_PROXIES", (ipaddress.ip_network("10.0.0.1"),))
    proxy = {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_PROTO": "https", "secure": True}
    for i in range(5):  # a made-up first entry is ignored
        client.post("/login/", {"username": "eve", "password": "guess"},
                    HTTP_X_FORWARDED_FOR=f"6.6.6.{i}, 10.0.0.7", **proxy)
    assert client.post("/login/", {"username": "eve", "password": "pw-eve-123"},
                       HTTP_X_FORWARDED_FOR="10.0.0.7", **proxy).status_code == 429
    other_pc = Client().post("/login/", {"username": "eve", "password": "pw-eve-123"},
                             HTTP_X_FORWARDED_FOR="10.0.0.9", **proxy)
    assert other_pc.status_code == 302  # the same proxy, another student's PC


def test_wrong_api_tokens_count_too_and_the_api_answers_the_lockout_in_json(client, student):
    for _ in range(4):
        assert client.get("/api/graphs", HTTP_AUTHORIZATION="Bearer wrong", REMOTE_ADDR="10.0.0.7").status_code == 401
    locked = client.get("/api/graphs", HTTP_AUTHORIZATION="Bearer wrong", REMOTE_ADDR="10.0.0.7")
    assert locked.status_code == 429
    assert locked.json() == {"detail": "Too many wrong API tokens from this computer: try again in 15 minutes, "
                                       "or ask your teacher to unlock it"}


def test_the_admin_unlocks_an_account(client, student, admin_client):
    for _ in range(5):
        log_in(client, "ada", "guess")
    assert log_in(client, "ada", "pw-ada-123").status_code == 429
    for attempt in AccessAttempt.objects.all():
        admin_client.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"})
    assert not AccessAttempt.objects.exists()
    assert log_in(client, "ada", "pw-ada-123").status_code == 302


# -- sessions -----------------------------------------------------------------------------

def test_a_login_ends_when_the_browser_closes(client, student):
    assert log_in(client, "ada", "pw-ada-123").status_code == 302
    cookie = client.cookies["sessionid"]
    assert cookie["expires"] == "" and cookie["max-age"] == ""  # a browser-session cookie


# -- settings a school turns on -----------------------------------------------------------

def django_script(code: str, **env) -> str:
    """Run code in a fresh Django process with these environment variables; its output."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "codefyui.settings",
                   "DJANGO_SECRET_KEY": "a-long-random-test-key-" + "x9Q2!" * 10, **env}
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()\n" + code], cwd=ROOT,
                          env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_codefyui_https_is_clean_for_check_deploy_redirects_and_marks_cookies_secure():
    output = django_script("""
import json
from django.core.management import call_command
from django.test import Client
from django.test.utils import setup_test_environment
call_command("check", deploy=True, fail_level="WARNING")
setup_test_environment()
plain = Client().get("/login/")
proxied = Client(headers={"X-Forwarded-Proto": "https"}).get("/login/")
print(json.dumps({"plain": [plain.status_code, plain.get("Location")], "proxied": proxied.status_code,
                  "hsts": proxied.get("Strict-Transport-Security"),
                  "csrf_secure": proxied.cookies["csrftoken"]["secure"]}))
""", CODEFYUI_HTTPS="1", CODEFYUI_TRUSTED_PROXIES="10.0.0.1")
    assert "System check identified no issues" in output
    seen = json.loads(output.strip().splitlines()[-1])
    assert seen["plain"] == [301, "https://testserver/login/"] and seen["proxied"] == 200
    assert seen["hsts"] == "max-age=31536000; includeSubDomains" and seen["csrf_secure"] is True


def test_codefyui_session_days_keeps_a_login():
    output = django_script("from django.conf import settings\n"
                           "print(settings.SESSION_EXPIRE_AT_BROWSER_CLOSE, settings.SESSION_COOKIE_AGE)",
                           CODEFYUI_SESSION_DAYS="7")
    assert output.split() == ["False", str(7 * 24 * 3600)]


# -- run ids and JSON errors --------------------------------------------------------------

SPELLINGS = [str.upper, lambda i: "{" + i + "}", lambda i: f"urn:uuid:{i}", lambda i: i.replace("-", "")]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_any_other_spelling_of_a_run_id_in_a_url_answers_404(student_client, student, spelling):
    run = Run.objects.create(owner=student, status=Run.Status.SUCCEEDED)
    other = spelling(str(run.pk))
    assert student_client.get(f"/api/runs/{run.pk}").status_code == 200
    for url in (f"/api/runs/{other}", f"/api/execution/outputs/{other}", f"/api/runs/{other}/cancel"):
        answer = student_client.get(url)
        assert answer.status_code == 404 and answer.json() == {"detail": "Not found"}
    assert student_client.post(f"/editor/runs/{other}/delete").status_code == 404
    assert Run.objects.filter(pk=run.pk).exists()


def test_an_unknown_api_address_answers_json(student_client, client):
    for who in (student_client, client):
        answer = who.get("/api/no-such-thing")
        assert answer.status_code == 404 and answer["Content-Type"] == "application/json"


def test_a_body_over_the_size_limit_answers_json(student_client, student, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2**20
    big = json.dumps({"name": "x" * 2**20, "nodes": [], "edges": []})
    answer = student_client.post("/api/graphs", big, content_type="application/json")
    assert answer.status_code == 413 and answer.json() == {"detail": "The request body is larger than 1 MB"}
    token = ApiToken.issue(student)
    answer = Client().post("/api/runs", big, content_type="application/json",
                           headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 413 and answer["Content-Type"] == "application/json"


def test_every_route_under_api_is_an_api_endpoint():
    """A token request skips the session, login-required and CSRF middleware: every view it can
    reach must authenticate by itself, as @api does."""
    from django.urls import URLPattern, URLResolver, get_resolver

    def views(patterns, prefix=""):
        for entry in patterns:
            if isinstance(entry, URLResolver):
                yield from views(entry.url_patterns, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                yield prefix + str(entry.pattern), entry.callback

    routes = [(route, view) for route, view in views(get_resolver().url_patterns) if route.startswith("api/")]
    assert len(routes) > 10
    assert [route for route, view in routes if not hasattr(view, "api_methods")] == []
