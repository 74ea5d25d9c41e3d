"""Who may see or change what. Every view, API call and (later) WebSocket subscription asks
here, so the rule lives in one place: a student sees only their own graphs and runs."""
from __future__ import annotations

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db.models import Model, QuerySet
from django.http import Http404


def visible_to(queryset: QuerySet, user) -> QuerySet:
    """The objects of ``queryset`` this user may see."""
    if not user.is_authenticated:
        return queryset.none()
    return queryset.filter(owner=user)


def find_visible(queryset: QuerySet, user, pk) -> Model | None:
    """One object the user may see, or None (also for a malformed id)."""
    try:
        return visible_to(queryset, user).get(pk=pk)  # get(), not first(): no ORDER BY to build
    except (ObjectDoesNotExist, ValueError, TypeError, ValidationError):
        return None


def get_visible(queryset: QuerySet, user, pk) -> Model:
    """One object the user may see, or Http404 (never 403: a stranger learns nothing)."""
    found = find_visible(queryset, user, pk)
    if found is None:
        raise Http404("Not found")
    return found
