"""Settings this browser keeps (Compute device and the Editor rows), in a cookie so they
work server-side, with no JavaScript."""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

from django.conf import settings

COOKIE = "codefyui_prefs"
CATEGORY_MODES = ("all", "basic")
CONNECTION_STYLES = ("circuit", "curve")
PANEL_NAME = re.compile(r"[a-z0-9_-]{0,40}")  # a pack's name, or "" (closed); the editor checks it is a plugin


@dataclass
class Prefs:
    device: str = "cpu"              # Execution → Compute device
    grid_snap: bool = False          # Editor → Grid snap
    tooltips: bool = True            # Editor → Show node tooltips
    category_mode: str = "all"       # Editor → Node category mode
    connection_style: str = "circuit"  # Editor → Connection style
    panel: str = ""                  # the plugin panel kept open (its pack's name), "" for none
    panel_docked: bool = True        # docked in the right-hand column, else floating over the canvas

    @classmethod
    def from_request(cls, request) -> "Prefs":
        try:
            raw = json.loads(request.COOKIES.get(COOKIE, "{}"))
        except ValueError:
            raw = {}
        return cls().updated(raw if isinstance(raw, dict) else {})

    def updated(self, raw: dict) -> "Prefs":
        """A copy with the valid values of ``raw`` (form text or JSON) applied."""
        values = asdict(self)
        for key in ("grid_snap", "tooltips", "panel_docked"):
            if key in raw:
                value = raw[key]
                values[key] = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "on")
        if isinstance(raw.get("device"), str) and 0 < len(raw["device"]) <= 32:
            values["device"] = raw["device"]
        if raw.get("category_mode") in CATEGORY_MODES:
            values["category_mode"] = raw["category_mode"]
        if isinstance(raw.get("panel"), str) and PANEL_NAME.fullmatch(raw["panel"]):
            values["panel"] = raw["panel"]
        if raw.get("connection_style") in CONNECTION_STYLES:
            values["connection_style"] = raw["connection_style"]
        return Prefs(**values)

    def save(self, response) -> None:
        response.set_cookie(COOKIE, json.dumps(asdict(self)), max_age=365 * 24 * 3600, samesite="Lax",
                            secure=settings.SESSION_COOKIE_SECURE)
