"""Buttons other apps add to a tab's File menu, without the editor importing them.

A provider is a function ``(tab) -> list[TabAction]``, registered once at start-up (an app's
``ready``); the editor asks every provider when it draws the menu for the tab's owner. Each
action is a POST form to ``url`` carrying the page's state (``views.page.back`` returns there).
apps.classes offers "Reset to the handed-out version" on a student's copy of a handout.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .models import Tab


@dataclass(frozen=True)
class TabAction:
    label: str   # the button's words
    url: str     # where the form posts
    help: str = ""


_providers: list[Callable[[Tab], list[TabAction]]] = []


def provide(provider: Callable[[Tab], list[TabAction]]) -> None:
    """Add a provider (once: a second registration of the same function is ignored)."""
    if provider not in _providers:
        _providers.append(provider)


def for_tab(tab: Tab) -> list[TabAction]:
    return [action for provider in _providers for action in provider(tab)]
