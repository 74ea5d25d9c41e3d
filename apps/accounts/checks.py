"""Start-up checks (``manage.py check``) for login throttling's settings."""
from __future__ import annotations

from django.core.checks import Tags, Warning, register

from codefyui import conf


@register(Tags.security)
def proxy_is_trusted(app_configs, **kwargs) -> list[Warning]:
    """Behind the school's proxy, X-Forwarded-For says which computer a login came from, but
    is read only from a listed proxy: unlisted, every computer shares the proxy's address."""
    if conf.HTTPS and not conf.TRUSTED_PROXIES:
        return [Warning(
            "CODEFYUI_HTTPS is on but CODEFYUI_TRUSTED_PROXIES lists no proxy: failed logins from every "
            "computer count against the proxy's address, so the school's typos together can pause logging in.",
            hint="Set CODEFYUI_TRUSTED_PROXIES to the proxy's address, e.g. 10.0.0.1 or 10.0.0.0/24.",
            id="codefyui.W001")]
    return []
