"""Where an element sits, written as classes instead of a style attribute (the
Content-Security-Policy allows no inline style). ``{% place x=card.x y=card.y h=card.h %}``
gives one class per non-zero decimal digit of each coordinate (``x2-3`` is 300 px), and
``at-x`` etc. to use them; editor/palette.css turns the digits back into left, top, width
and height. A coordinate past DIGITS digits is drawn at the largest one."""
from __future__ import annotations

from django import template

register = template.Library()

AXES = {"x": "left", "y": "top", "w": "width", "h": "height"}
DIGITS = 6


@register.simple_tag
def place(**coordinates: float) -> str:
    classes = []
    for axis, value in coordinates.items():
        number = round(float(value))
        classes.append(f"at-{axis}")
        if number < 0:
            classes.append(f"{axis}-neg")
        digits = str(min(abs(number), 10**DIGITS - 1))
        classes += [f"{axis}{place}-{digit}" for place, digit in enumerate(reversed(digits)) if digit != "0"]
    return " ".join(classes)
