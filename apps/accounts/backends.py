"""Authentication by API token (``Authorization: Bearer <token>``), for the JSON API: listed
in AUTHENTICATION_BACKENDS, so codefyui.api asks ``authenticate(request, api_token=...)``
and knows nothing of how tokens are kept."""
from __future__ import annotations

from django.contrib.auth.backends import ModelBackend

from .models import ApiToken


class ApiTokenBackend(ModelBackend):
    def authenticate(self, request, api_token: str | None = None):
        if not api_token:
            return None
        token = ApiToken.objects.select_related("user").filter(digest=ApiToken.hash(api_token)).first()
        return token.user if token and self.user_can_authenticate(token.user) else None
