"""The stylesheet the editor's pages draw their colours and positions with: generated once
from the node catalogue's colours and the placement classes, so no page needs an inline
style (the Content-Security-Policy allows none)."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.text import slugify
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET

from apps.graphs.nodes.base import CATEGORY_COLOURS, PORT_COLOURS, category_colour
from apps.inspector.values import HEAT_DARKEST, HEAT_RGB

from ..canvas import NOTE_COLOUR
from ..templatetags.placement import AXES, DIGITS

_css: str | None = None


@require_GET
@cache_control(private=True, max_age=3600)
def palette_css(request: HttpRequest) -> HttpResponse:
    global _css
    if _css is None:
        _css = render_to_string("editor/palette.css", {
            "any_colour": PORT_COLOURS["ANY"], "port_colours": sorted(PORT_COLOURS.items()),
            "default_category_colour": category_colour(""),
            "category_colours": sorted((slugify(c), colour) for c, colour in {**CATEGORY_COLOURS, "": NOTE_COLOUR}.items()),
            "heat_rgb": HEAT_RGB, "heat_levels": [(n, n / 100) for n in range(round(HEAT_DARKEST * 100) + 1)],
            "axes": AXES.items(), "places": [(i, 10**i) for i in range(DIGITS)], "digits": range(1, 10),
        })
    return HttpResponse(_css, content_type="text/css")
