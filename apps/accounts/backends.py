"""Authentication by API token (``Authorization: Bearer <token>``), for the JSON API and the
run socket. Listed first in AUTHENTICATION_BACKENDS: a wrong token falls through to axes,
which counts it (codefyui.api asks this backend first, then ``authenticate`` for a token it
does not know)."""
from __future__ import annotations

import copy
import threading

from cachetools import TTLCache
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.db.models.signals import post_delete, post_save

from .models import ApiToken

REMEMBER_S = 10.0   # how long a token's user is remembered in this process
REMEMBER_MAX = 4096  # tokens remembered at once (a school's accounts); past it, the least recently used go

# digest -> user. A script that waits on its runs makes two requests a run, and the token's
# lookup was most of a small request's cost. A change to a token or a user forgets that
# user's tokens in this process at once (a login saves the user too: forgetting everyone's
# then would cost every student a lookup); another server process, or a bulk update that
# sends no signal, is read within REMEMBER_S. cachetools' caches are not thread-safe: every
# use holds the lock (requests, the event loop's ``remembered`` and the signals share it).
_remembered: TTLCache[str, object] = TTLCache(maxsize=REMEMBER_MAX, ttl=REMEMBER_S)
_lock = threading.Lock()


def forget_tokens(sender, instance, **_) -> None:
    user_id = instance.user_id if sender is ApiToken else instance.pk
    with _lock:
        # listing the values touches each (TTLCache is an LRU too): harmless, its order is their age
        for digest in [digest for digest, user in _remembered.items() if user.pk == user_id]:
            _remembered.pop(digest, None)   # pop, not del: it may have expired since it was listed


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
            try:
                user = ApiToken.objects.select_related("user").get(digest=digest).user
            except ApiToken.DoesNotExist:
                return None
            if not self.user_can_authenticate(user):
                return None
            with _lock:
                _remembered[digest] = user
        return copy.copy(user)  # each request its own instance: views may set attributes on it

    def remembered(self, api_token: str):
        """The token's user if this process remembers it from an earlier request, else None.
        Reads no database, so the event loop may ask (apps/runs/api.py)."""
        user = _recalled(ApiToken.hash(api_token)) if api_token else None
        return None if user is None else copy.copy(user)


def _recalled(digest: str):
    with _lock:
        return _remembered.get(digest)
