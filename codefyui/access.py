"""Who may see or change what. Every view, API call and (later) WebSocket subscription asks
here, so the rule lives in one place: a student sees only their own graphs and runs."""
from __future__ import annotations

from django.db.models import Model, QuerySet
from django.http import Http404


def visible_to(queryset: QuerySet, user) -> QuerySet:
    """The objects of ``queryset`` this user may see."""
    if not user.is_authenticated:
        return queryset.none()
    return queryset.filter(owner=user)


def get_visible(queryset: QuerySet, user, pk) -> Model:
    """One object the user may see, or Http404 (never 403: a stranger learns nothing)."""
    try:
        return visible_to(queryset, user).get(pk=pk)
    except (queryset.model.DoesNotExist, ValueError, TypeError):
        raise Http404("Not found") from None
    except Exception as exc:  # a malformed UUID is a ValidationError
        if exc.__class__.__name__ == "ValidationError":
            raise Http404("Not found") from None
        raise
