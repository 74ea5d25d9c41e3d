"""``{{ text|markdown }}``: Markdown with ``$…$`` LaTeX typeset as MathML on the server.

A minimal body for the packs branch; i15-steps-script's version replaces it on merge.
"""
from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe
from latex2mathml.converter import convert
from markdown_it import MarkdownIt

register = template.Library()

_MARKDOWN = MarkdownIt("commonmark", {"html": False})
_MATH = re.compile(r"\$([^$\n]+)\$")


def _mathml(latex: str) -> str:
    try:
        return convert(latex)
    except Exception:  # latex2mathml raises many kinds; show the source rather than fail the page
        return f"<code>{escape(latex)}</code>"


@register.filter
def markdown(text: str) -> str:
    formulas: list[str] = []

    def hold(match: re.Match) -> str:
        formulas.append(_mathml(match[1]))
        return f"MATHSLOT{len(formulas) - 1}X"

    html = _MARKDOWN.render(_MATH.sub(hold, str(text or "")))
    return mark_safe(re.sub(r"MATHSLOT(\d+)X", lambda m: formulas[int(m[1])], html))
