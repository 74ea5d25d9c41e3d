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
from django.db import connections, router
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
            user = _token_user(digest)
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


def _token_user(digest: str):
    """The user whose token has this digest, or None: one statement, made once, its row made a
    user as the ORM's compiler makes one (each column through its converters). Through the ORM
    (``ApiToken.objects.select_related("user").get(digest=...)``) this cost ~0.3 ms, ten times
    what the database took, and through a RawQuerySet ~75 µs against ~25 µs: a class's first
    requests of a burst paid it on Django's one request thread."""
    user_model = get_user_model()
    connection = connections[router.db_for_read(user_model)]
    sql, names, columns = _token_user_query(connection.alias)
    with connection.cursor() as cursor:
        cursor.execute(sql, [digest])
        row = cursor.fetchone()
    if row is None:
        return None
    values = list(row)
    for i, column, converters in columns:
        for convert in converters:
            values[i] = convert(values[i], column, connection)
    return user_model.from_db(connection.alias, names, values)


@functools.cache
def _token_user_query(alias: str) -> tuple[str, list[str], list[tuple]]:
    """The SQL that finds a token's user, the fields its columns fill, and (index, column,
    converters) for each column that has converters on this database."""
    connection, user, token = connections[alias], get_user_model()._meta, ApiToken._meta
    quote = connection.ops.quote_name
    columns = [field.get_col("u") for field in user.concrete_fields]
    sql = (f"SELECT {', '.join(f'u.{quote(column.target.column)}' for column in columns)} "
           f"FROM {quote(user.db_table)} u JOIN {quote(token.db_table)} t "
           f"ON t.{quote(token.get_field('user').column)} = u.{quote(user.pk.column)} "
           f"WHERE t.{quote(token.get_field('digest').column)} = %s")
    converted = [(i, column, converters) for i, column in enumerate(columns)
                 if (converters := connection.ops.get_db_converters(column) + column.target.get_db_converters(connection))]
    return sql, [column.target.attname for column in columns], converted
