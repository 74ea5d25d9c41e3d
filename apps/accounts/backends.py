"""Authentication by API token (``Authorization: Bearer <token>``), for the JSON API and the
run socket. Listed first in AUTHENTICATION_BACKENDS: a wrong token falls through to axes,
which counts it (codefyui.api asks this backend first, then ``authenticate`` for a token it
does not know)."""
from __future__ import annotations

import copy
import functools
import time

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.db import connection
from django.db.models.signals import post_delete, post_save

from .models import ApiToken

REMEMBER_S = 10.0   # how long a token's user is remembered in this process
REMEMBER_MAX = 4096  # tokens remembered at once (a school's accounts; past it, start afresh)

# digest -> (user, monotonic time it was read). A script that waits on its runs makes two
# requests a run, and the token's lookup was most of a small request's cost. A change to a
# token or a user forgets that user's tokens in this process at once (a login saves the
# user too: forgetting everyone's then would cost every student a lookup); another server
# process, or a bulk update that sends no signal, is read within REMEMBER_S.
_remembered: dict[str, tuple[object, float]] = {}


def forget_tokens(sender, instance, **_) -> None:
    user_id = instance.user_id if sender is ApiToken else instance.pk
    for digest, (user, _) in list(_remembered.items()):   # a copy: a request may remember a token meanwhile
        if user.pk == user_id:
            _remembered.pop(digest, None)


for _sender in (ApiToken, get_user_model()):  # a token replaced or deleted, a user changed or deleted
    post_save.connect(forget_tokens, sender=_sender, weak=False)
    post_delete.connect(forget_tokens, sender=_sender, weak=False)


class ApiTokenBackend(ModelBackend):
    def authenticate(self, request, api_token: str | None = None):
        if not api_token:
            return None
        digest = ApiToken.hash(api_token)
        user = _recalled(digest)
        if user is None:
            user = next(iter(get_user_model().objects.raw(_token_user_sql(), [digest])), None)
            if user is None or not self.user_can_authenticate(user):
                _remembered.pop(digest, None)
                return None
            if len(_remembered) >= REMEMBER_MAX:
                _remembered.clear()
            _remembered[digest] = (user, time.monotonic())
        return copy.copy(user)  # each request its own instance: views may set attributes on it

    def remembered(self, api_token: str):
        """The token's user if this process remembers it from an earlier request, else None.
        Reads no database, so the event loop may ask (apps/runs/api.py)."""
        user = _recalled(ApiToken.hash(api_token)) if api_token else None
        return None if user is None else copy.copy(user)


def _recalled(digest: str):
    user, read_at = _remembered.get(digest, (None, 0.0))
    return user if user is not None and time.monotonic() - read_at <= REMEMBER_S else None


@functools.cache
def _token_user_sql() -> str:
    """The SQL that finds a token's user. Built by the ORM (``ApiToken.objects.select_related
    ("user").get(digest=...)``) the query cost ~0.3 ms, ten times what the database took: a
    whole class's first requests of a burst paid it on Django's one request thread."""
    quote, user, token = connection.ops.quote_name, get_user_model()._meta, ApiToken._meta
    return (f"SELECT u.* FROM {quote(user.db_table)} u JOIN {quote(token.db_table)} t "
            f"ON t.{quote(token.get_field('user').column)} = u.{quote(user.pk.column)} "
            f"WHERE t.{quote(token.get_field('digest').column)} = %s")
