"""Login throttling on a lab's shared computers (django-axes, settings.py): one student's typos
pause that account on that computer only; a whole computer pauses only at a count a class does
not reach; a try meanwhile does not make the wait longer; the lock says who is paused and what
to do; X-Forwarded-For is believed only from a listed proxy."""
from __future__ import annotations

import ipaddress
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.test import Client, RequestFactory
from django.utils import timezone

from apps.accounts.checks import proxy_is_trusted
from codefyui import conf
from codefyui.access import client_address

pytestmark = pytest.mark.django_db

PC = "10.0.0.7"


def log_in(username, password, address=PC, client=None, **extra):
    return (client or Client()).post("/login/", {"username": username, "password": password},
                                     REMOTE_ADDR=address, **extra)


def lock(username="ada", address=PC):
    for _ in range(conf.LOGIN_FAILURE_LIMIT):
        answer = log_in(username, "guess", address)
    assert answer.status_code == 429   # the failure that reaches the limit is answered with the lock
    return answer


def fill_the_address(address=PC, failures=50):
    """That many wrong passwords from one computer, two for each of many usernames."""
    for i in range(failures):
        assert log_in(f"pupil{i // 2}", "guess", address).status_code == 200


def words(answer) -> str:
    """A page's text with its line breaks and indents as single spaces."""
    return " ".join(answer.content.decode().split())


def networks(text: str):
    return tuple(ipaddress.ip_network(entry.strip()) for entry in text.split(","))


# -- one account on one computer ------------------------------------------------------------

def test_one_students_typos_pause_only_that_account_on_that_computer(student, stranger, admin_user):
    for _ in range(4):
        assert log_in("ada", "guess").status_code == 200   # the form again, with its error
    lock()
    assert log_in("ada", "pw-ada-123").status_code == 429
    assert log_in("eve", "pw-eve-123").status_code == 302   # the student beside her, at once
    admin = Client().post("/admin/login/?next=/admin/", {"username": "admin", "password": "password"},
                          REMOTE_ADDR=PC)
    assert admin.status_code == 302 and admin["Location"] == "/admin/"
    # The chosen behaviour: the count is per username *and* address, so ada logs in at another PC.
    assert log_in("ada", "pw-ada-123", address="10.0.0.8").status_code == 302


def test_another_student_who_then_mistypes_is_told_only_of_their_own_password(student, stranger):
    lock()
    answer = log_in("eve", "guess")
    body = words(answer)
    assert answer.status_code == 200 and "do not match" in body
    assert "ada" not in body and "paused" not in body


def test_the_lock_page_names_the_account_says_ask_the_teacher_and_until_when(student):
    body = words(lock())
    until = timezone.localtime(AccessAttempt.objects.get().attempt_time + timedelta(minutes=15))
    assert "<h1>Account paused</h1>" in body
    assert "The account <strong>ada</strong> is paused for 15 minutes after too many wrong passwords." in body
    assert (f'Ask your teacher to unlock it, or try again after <time datetime="{until.isoformat()}">'
            f"{until:%H:%M}</time>.") in body
    assert "<script" not in body   # a page that needs no JavaScript


def test_a_try_during_the_lockout_does_not_make_the_wait_longer(student):
    lock()
    fourteen_minutes_ago = timezone.now() - timedelta(minutes=14)
    AccessAttempt.objects.update(attempt_time=fourteen_minutes_ago)
    for password in ("guess", "pw-ada-123"):
        assert log_in("ada", password).status_code == 429
    attempt = AccessAttempt.objects.get()
    assert attempt.attempt_time == fourteen_minutes_ago and attempt.failures_since_start == 5
    assert "is paused for 1 minute after" in words(log_in("ada", "guess"))
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=15, seconds=1))
    assert log_in("ada", "pw-ada-123").status_code == 302   # the wait it began with is over


# -- one computer, every account --------------------------------------------------------------

def test_fifty_wrong_passwords_from_one_computer_pause_it_for_every_account(stranger):
    fill_the_address(failures=49)
    assert log_in("eve", "pw-eve-123").status_code == 302   # 49: a class's typos
    fill_the_address(failures=1)
    paused = log_in("eve", "pw-eve-123")
    body = words(paused)
    assert paused.status_code == 429 and "<h1>Logging in on this computer is paused</h1>" in body
    assert "Too many wrong passwords were typed on this computer" in body and "The account" not in body
    assert "Ask your teacher to unlock this computer" in body
    assert log_in("eve", "pw-eve-123", address="10.0.0.9").status_code == 302   # another computer


# -- the API's tokens -------------------------------------------------------------------------

def test_wrong_api_tokens_pause_tokens_from_that_computer_not_its_accounts(client, student):
    for _ in range(4):
        assert client.get("/api/graphs", HTTP_AUTHORIZATION="Bearer wrong", REMOTE_ADDR=PC).status_code == 401
    assert client.get("/api/graphs", HTTP_AUTHORIZATION="Bearer wrong", REMOTE_ADDR=PC).status_code == 429
    assert log_in("ada", "pw-ada-123").status_code == 302   # her script's old token does not pause her


def test_wrong_api_tokens_are_refused_once_the_computer_is_paused(client):
    fill_the_address()
    refused = client.get("/api/graphs", HTTP_AUTHORIZATION="Bearer wrong", REMOTE_ADDR=PC)
    assert refused.status_code == 429 and refused.json()["detail"].startswith(
        "Too many wrong passwords or API tokens from this computer: try again in 15 minutes")
    assert AccessAttempt.objects.filter(username=None).count() == 0   # refused, not counted


# -- which computer: X-Forwarded-For ----------------------------------------------------------

def test_a_client_set_forwarded_for_is_ignored_unless_the_peer_is_a_listed_proxy(student, monkeypatch):
    monkeypatch.setattr(conf, "HTTPS", True)   # whatever CODEFYUI_HTTPS says
    monkeypatch.setattr(conf, "TRUSTED_PROXIES", ())
    https = {"HTTP_X_FORWARDED_PROTO": "https", "secure": True}
    for i in range(4):
        log_in("ada", "guess", HTTP_X_FORWARDED_FOR=f"6.6.6.{i}", **https)
    monkeypatch.setattr(conf, "TRUSTED_PROXIES", networks("10.0.0.1"))   # listed, but not this peer
    assert log_in("ada", "guess", HTTP_X_FORWARDED_FOR="6.6.6.9", **https).status_code == 429
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {PC}


@pytest.mark.parametrize("peer, forwarded, client", [
    ("10.0.0.1", "6.6.6.6, 192.168.1.5, 10.1.2.3", "192.168.1.5"),   # right-most past the proxies
    ("10.0.0.1", "", "10.0.0.1"),                                     # the proxy's own request
    ("10.0.0.1", "10.1.0.9, 10.1.2.3", "10.1.0.9"),                   # all proxies: the first of them
    ("10.0.0.1", "not-an-address, 10.1.2.3", "10.1.2.3"),             # no proxy wrote that entry
    ("::ffff:10.0.0.1", "192.168.1.5", "192.168.1.5"),                # a dual-stack socket's IPv4 peer
    ("192.168.1.9", "10.0.0.50", "192.168.1.9"),                      # an unlisted peer's header
])
def test_the_address_is_the_right_most_entry_that_is_no_listed_proxy(monkeypatch, peer, forwarded, client):
    monkeypatch.setattr(conf, "TRUSTED_PROXIES", networks("10.0.0.1, 10.1.0.0/16"))
    request = RequestFactory().get("/", REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == client


def test_trusted_proxies_are_addresses_or_networks_and_a_bad_entry_stops_start_up(monkeypatch):
    monkeypatch.setenv("CODEFYUI_TRUSTED_PROXIES", " 10.0.0.1, 10.1.0.0/16,fd00::/8 ,")
    assert conf._networks("CODEFYUI_TRUSTED_PROXIES") == networks("10.0.0.1, 10.1.0.0/16, fd00::/8")
    for bad, named in (("10.0.0.1, proxy.school", "'proxy.school'"), ("10.0.0.1/24", "10.0.0.1/24 has host bits set")):
        monkeypatch.setenv("CODEFYUI_TRUSTED_PROXIES", bad)
        with pytest.raises(SystemExit, match=f"CODEFYUI_TRUSTED_PROXIES must list .*{named}"):
            conf._networks("CODEFYUI_TRUSTED_PROXIES")


def test_https_without_a_listed_proxy_is_warned_of(monkeypatch):
    monkeypatch.setattr(conf, "HTTPS", True)
    monkeypatch.setattr(conf, "TRUSTED_PROXIES", ())
    assert [warning.id for warning in proxy_is_trusted(None)] == ["codefyui.W001"]
    monkeypatch.setattr(conf, "TRUSTED_PROXIES", networks("10.0.0.1"))
    assert proxy_is_trusted(None) == []
