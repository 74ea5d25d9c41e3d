"""Login throttling's second limit, and what a lockout tells the one it stops.

django-axes counts failed logins per username and address together (AXES_LOCKOUT_PARAMETERS)
against AXES_FAILURE_LIMIT: one student's typos pause only that student on that computer.
Axes has one limit for every lockout parameter, so this handler adds the other: all usernames
together on one address, at CODEFYUI_LOGIN_ADDRESS_FAILURE_LIMIT (docs/decisions/login-lockout.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_client_username, get_cool_off, get_failure_limit
from axes.models import AccessAttempt
from django.db.models import QuerySet, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.defaultfilters import pluralize

from codefyui import conf
from codefyui.api import error_response


def address_attempts(request) -> QuerySet:
    """The failures that still count on the request's address, for any username (or none)."""
    return AccessAttempt.objects.filter(ip_address=request.axes_ip_address,
                                        attempt_time__gte=get_cool_off_threshold(request))


def address_locked(request) -> bool:
    failures = address_attempts(request).aggregate(total=Sum("failures_since_start"))["total"] or 0
    return failures >= conf.LOGIN_ADDRESS_FAILURE_LIMIT


class LockoutHandler(AxesDatabaseHandler):
    """Axes' database handler (AXES_HANDLER), also locked while the address is. The try that
    reaches the address limit is answered as a wrong password; the tries after it are refused."""

    def is_locked(self, request, credentials: dict | None = None) -> bool:
        return super().is_locked(request, credentials) or address_locked(request)


@dataclass
class Lock:
    username: str | None   # None: a wrong API token, which names no account
    on_address: bool       # every account on this computer is paused, not just this one
    until: datetime
    minutes: int           # until then, rounded up


def _lock_end(attempts: QuerySet, limit: int, cool_off: timedelta) -> datetime | None:
    """When these attempts stop reaching the limit: a row counts until its last failure is
    cool_off old, so the lock lasts until the newest rows that reach the limit are."""
    total = 0
    for attempt_time, failures in attempts.order_by("-attempt_time").values_list("attempt_time",
                                                                                 "failures_since_start"):
        total += failures
        if total >= limit:
            return attempt_time + cool_off
    return None


def lock_for(request, credentials: dict | None) -> Lock:
    """The lock that refused this request (AXES_LOCKOUT_CALLABLE's request, after axes looked)."""
    cool_off, now, limit = get_cool_off(request), request.axes_attempt_time, get_failure_limit(request, credentials)
    ends = [_lock_end(attempts, limit, cool_off)
            for attempts in AxesProxyHandler.get_implementation().get_user_attempts(request, credentials)]
    address_end = _lock_end(address_attempts(request), conf.LOGIN_ADDRESS_FAILURE_LIMIT, cool_off)
    until = max((end for end in (*ends, address_end) if end), default=now + cool_off)
    return Lock(get_client_username(request, credentials) or None, address_end is not None, until,
                max(1, math.ceil((until - now).total_seconds() / 60)))


def locked_out(request: HttpRequest, original_response=None, credentials: dict | None = None) -> HttpResponse:
    """django-axes' answer to a login (or API token) tried while it is locked out
    (AXES_LOCKOUT_CALLABLE), to the account or computer that is locked: what is paused, until
    when, and who can unlock it; JSON under /api/, else a page."""
    # axes' async middleware (8.3.1) passes the credentials in original_response's place
    lock = lock_for(request, getattr(request, "axes_credentials", None) or credentials)
    if request.path.startswith("/api/"):
        wait = f"try again in {lock.minutes} minute{pluralize(lock.minutes)}, or ask your teacher to unlock it"
        if lock.on_address:
            return error_response(429, f"Too many wrong passwords or API tokens from this computer: {wait}")
        if lock.username is None:
            return error_response(429, f"Too many wrong API tokens from this computer: {wait}")
        return error_response(429, f"The account {lock.username} is paused after too many wrong passwords: {wait}")
    return render(request, "registration/locked_out.html", {"lock": lock}, status=429)
