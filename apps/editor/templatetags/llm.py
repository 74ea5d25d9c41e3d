"""``{% llm_provider as llm %}``: the LLM endpoint LLMChat calls ({base_url, model}), or None
when the server runs offline; the Settings popover's LLM Providers row reads it."""
from __future__ import annotations

from django import template

from apps.graphs.nodes.library.llm_chat import configured

register = template.Library()


@register.simple_tag
def llm_provider():
    return configured()
