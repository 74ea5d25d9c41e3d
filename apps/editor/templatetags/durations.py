"""How long a run took, as a class reads it in the Runs panel and on the home page."""
from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    """Under a second in milliseconds ("7 ms", where two decimals of a second read "0.00 s"),
    from a second on in seconds ("2.35 s"), and "—" for a run that has not finished. A number
    and its unit never part at the end of a line (no-break spaces)."""
    if seconds is None:
        return "—"
    if seconds < 0.001:
        text = "under 1 ms"
    elif seconds < 0.9995:   # what rounds to 1000 ms reads 1.00 s
        text = f"{round(seconds * 1000)} ms"
    else:
        text = f"{seconds:.2f} s"
    return text.replace(" ", "\u00a0")
