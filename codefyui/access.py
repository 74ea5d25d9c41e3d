"""Who may see or change what. Every view, API call and WebSocket subscription asks here,
so the rule lives in one place: a student sees only their own graphs and runs. Also who
is asking: the address login throttling counts per."""
from __future__ import annotations

import ipaddress
import re
import uuid
from typing import Any, Callable

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.contrib.auth import get_user_model
from django.db.models import Model, Q, QuerySet
from django.dispatch import Signal
from django.http import Http404
from django.urls.converters import UUIDConverter

from codefyui import conf

# The one spelling of a run id in URLs (the <uuid:...> converter's): lower-case 8-4-4-4-12 hex.
CANONICAL_UUID = re.compile(UUIDConverter.regex)


def canonical_uuid(text: str) -> uuid.UUID | None:
    """A run id as a query string or form carries it; None for any other spelling."""
    return uuid.UUID(text) if CANONICAL_UUID.fullmatch(text) else None


def visible_to(queryset: QuerySet, user) -> QuerySet:
    """The objects of ``queryset`` this user may see."""
    if not user.is_authenticated:
        return queryset.none()
    return queryset.filter(owner=user)


def readable_to(queryset: QuerySet, user) -> QuerySet:
    """The objects of ``queryset`` this user may read: their own, and for a teacher, those of
    the students in the classes they teach (a look over the shoulder: read-only, so every
    write path asks ``visible_to``). Relations by name: this module imports no app."""
    if not (user.is_authenticated and user.has_perm("accounts.look_at_work")):
        return visible_to(queryset, user)
    students = get_user_model().objects.filter(enrolment__classroom__teachers=user).values("pk")
    return queryset.filter(Q(owner=user) | Q(owner__in=students))


# Sent when someone reads another user's object (a teacher's look over a student's shoulder),
# with ``viewer``, ``owner_id``, ``what`` ("graph", "run", ...), ``ref`` (its id) and ``path``.
# apps.classes writes each to its audit log; this package names no app.
looked_at = Signal()


def note_look(request, owner_id: int, what: str, ref) -> None:
    """Tell the audit log that ``request.user`` read ``what`` (``ref``) of another user's."""
    if owner_id != request.user.pk:
        looked_at.send(sender=None, viewer=request.user, owner_id=owner_id, what=what, ref=str(ref),
                       path=request.get_full_path()[:300])


def _one(scope: Callable[[QuerySet, Any], QuerySet], queryset: QuerySet, user, pk) -> Model | None:
    try:
        return scope(queryset, user).get(pk=pk)  # get(), not first(): no ORDER BY to build
    except (ObjectDoesNotExist, ValueError, TypeError, ValidationError):
        return None


def _found(found: Model | None) -> Model:
    if found is None:
        raise Http404("Not found")   # never 403: a stranger learns nothing
    return found


def find_readable(queryset: QuerySet, user, pk) -> Model | None:
    """One object the user may read (``readable_to``), or None (also for a malformed id)."""
    return _one(readable_to, queryset, user, pk)


def get_readable(queryset: QuerySet, user, pk) -> Model:
    """One object the user may read, or Http404. For reads only: writes ask ``get_visible``."""
    return _found(find_readable(queryset, user, pk))


def find_visible(queryset: QuerySet, user, pk) -> Model | None:
    """One object the user may see, or None (also for a malformed id)."""
    return _one(visible_to, queryset, user, pk)


def get_visible(queryset: QuerySet, user, pk) -> Model:
    """One object the user may see, or Http404."""
    return _found(find_visible(queryset, user, pk))


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    return getattr(ip, "ipv4_mapped", None) or ip   # a dual-stack socket's ::ffff:10.0.0.1 is 10.0.0.1


def _trusted(text: str) -> bool:
    """Whether ``text`` is the address of a proxy listed in CODEFYUI_TRUSTED_PROXIES."""
    ip = _ip(text)
    return ip is not None and any(ip in network for network in conf.TRUSTED_PROXIES)


def client_address(request) -> str:
    """Where a login attempt comes from (django-axes counts failures per address): the
    connection's address, unless that is a trusted proxy. Each proxy appends the address it
    saw to X-Forwarded-For, so from the right, past the trusted proxies, the first entry is
    the one a trusted proxy wrote about its client; entries left of it are the client's own
    and could say anything."""
    address = request.META.get("REMOTE_ADDR", "")
    if not _trusted(address):
        return address
    for hop in reversed(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")):
        if _ip(hop) is None:   # no proxy wrote that
            break
        address = hop.strip()
        if not _trusted(address):
            break
    return address
