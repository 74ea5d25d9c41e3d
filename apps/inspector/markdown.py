"""Step descriptions as Markdown with their mathematics typeset on the server.

``render(text)`` turns Markdown (raw HTML escaped, never passed through) into HTML, and
every ``$…$`` (inline) or ``$$…$$`` (display) formula into MathML with latex2mathml, so a
browser shows the formula without any script. A formula latex2mathml cannot read shows as
code. Descriptions repeat on every request, so the HTML is cached by text.
"""
from __future__ import annotations

import functools
import html
from xml.etree.ElementTree import Element, tostring

from django.utils.safestring import SafeString, mark_safe
from latex2mathml.converter import convert_to_element
from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline


def _math_rule(state: StateInline, silent: bool) -> bool:
    """``$…$`` or ``$$…$$`` at the cursor: one math token with the formula as its content."""
    src, start = state.src, state.pos
    if src[start] != "$":
        return False
    marker = "$$" if src.startswith("$$", start) else "$"
    begin = start + len(marker)
    end = src.find(marker, begin)
    formula = src[begin:end] if end > begin else ""
    if not formula.strip() or (marker == "$" and (formula[0].isspace() or formula[-1].isspace())):
        return False  # "costs $5 or $6" is text, not a formula
    if not silent:
        token = state.push("math", "math", 0)
        token.content, token.markup = formula, marker
    state.pos = end + len(marker)
    return True


def mathml(formula: str, display: bool = False) -> str:
    """A formula as MathML, every text node escaped; a formula that cannot be read, as code."""
    try:
        root = convert_to_element(formula, display="block" if display else "inline")
    except Exception:  # latex2mathml raises many kinds for malformed input
        return f'<code class="formula">{html.escape(formula)}</code>'
    for element in root.iter():  # latex2mathml leaves entities in text; let the serialiser escape
        _unescape(element)
    return tostring(root, encoding="unicode")


def _unescape(element: Element) -> None:
    if element.text:
        element.text = html.unescape(element.text)


def _render_math(self, tokens, idx, options, env) -> str:
    token = tokens[idx]
    return mathml(token.content, display=token.markup == "$$")


_MD = MarkdownIt("commonmark", {"html": False}).disable("image")
_MD.inline.ruler.before("escape", "math", _math_rule)
_MD.add_render_rule("math", _render_math)


@functools.lru_cache(maxsize=512)
def render(text: str) -> SafeString:
    """Markdown with maths, as safe HTML."""
    return mark_safe(_MD.render(text or "").strip())
