"""``{{ text|markdown }}``: Markdown with ``$…$`` / ``$$…$$`` maths typeset as MathML on the
server (apps/inspector/markdown.py); raw HTML in the text is shown, never run."""
from django import template

from ..markdown import render

register = template.Library()


@register.filter
def markdown(text) -> str:
    return render(str(text or ""))
