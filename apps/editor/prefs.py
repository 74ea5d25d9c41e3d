"""Settings this browser keeps (Compute device and the Editor rows), in a cookie so they
work server-side, with no JavaScript."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

COOKIE = "codefyui_prefs"
CATEGORY_MODES = ("all", "basic")
CONNECTION_STYLES = ("circuit", "curve")


@dataclass
class Prefs:
    device: str = "cpu"              # Execution → Compute device
    grid_snap: bool = False          # Editor → Grid snap
    tooltips: bool = True            # Editor → Show node tooltips
    category_mode: str = "all"       # Editor → Node category mode
    connection_style: str = "circuit"  # Editor → Connection style

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
        for key in ("grid_snap", "tooltips"):
            if key in raw:
                value = raw[key]
                values[key] = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "on")
        if isinstance(raw.get("device"), str) and 0 < len(raw["device"]) <= 32:
            values["device"] = raw["device"]
        if raw.get("category_mode") in CATEGORY_MODES:
            values["category_mode"] = raw["category_mode"]
        if raw.get("connection_style") in CONNECTION_STYLES:
            values["connection_style"] = raw["connection_style"]
        return Prefs(**values)

    def save(self, response) -> None:
        response.set_cookie(COOKIE, json.dumps(asdict(self)), max_age=365 * 24 * 3600, samesite="Lax")
