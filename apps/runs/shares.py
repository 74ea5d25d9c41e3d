"""Which share of the capture store a student's runs take (``store.Share``): their class's, or
the rest's. Asked once when a run is queued, so the store's writes never ask the database.

The runs app imports no other app: the class is found through the user model's relation
names (``enrolment`` to ``Classroom``, apps/accounts/models.py), one query.
"""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import FieldError

from .store import REST, Share


def of(owner_pk: int) -> Share:
    """The owner's class's share (``class-<id>``, with the MB an administrator gave it), or REST."""
    try:
        row = (get_user_model().objects.filter(pk=owner_pk)
               .values_list("enrolment__classroom_id", "enrolment__classroom__store_mb").first())
    except FieldError:  # a user model without classes: everyone shares the store
        return REST
    if row is None or row[0] is None:
        return REST
    return Share(f"class-{row[0]}", row[1])
