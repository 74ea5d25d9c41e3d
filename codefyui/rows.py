"""The two statements every run makes, without the ORM building them again each time.

Through the ORM, inserting a Run row or rewriting its status, nodes and log cost ~0.15–0.2 ms
of Python on a school server, three to four times what the database took. A class's burst of
runs pays both for every run on the server process's one interpreter, where requests wait for
it (bench/class_burst.py). Here each statement's SQL is made once per model and field list,
and every value is prepared by its own field as the ORM prepares it (``get_db_prep_save``,
``pre_save``), so each database Django supports stores and reads back the same row. Like
``QuerySet.update`` and ``bulk_create``, neither sends signals nor runs ``save()``.
"""
from __future__ import annotations

from functools import cache
from typing import Any

from django.db import connections, router
from django.db.models import Model


def insert(instance: Model) -> Model:
    """The new object's row, as ``Model.objects.create`` would write it; the primary key must
    have a default (a UUID), so nothing is read back."""
    model, alias = type(instance), router.db_for_write(type(instance))
    connection = connections[alias]
    fields = _insert_fields(model)
    params = [field.get_db_prep_save(field.pre_save(instance, True), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(model, alias), params)
    instance._state.adding, instance._state.db = False, alias
    return instance


def update(model: type[Model], pk: Any, **values: Any) -> int:
    """``model.objects.filter(pk=pk).update(**values)`` for plain field values; the rows changed."""
    alias = router.db_for_write(model)
    connection = connections[alias]
    meta = model._meta
    params = [meta.get_field(name).get_db_prep_save(value, connection) for name, value in values.items()]
    params.append(meta.pk.get_db_prep_value(pk, connection))
    with connection.cursor() as cursor:
        cursor.execute(_update_sql(model, alias, tuple(values)), params)
        return cursor.rowcount


@cache
def _insert_fields(model: type[Model]) -> list:
    return [field for field in model._meta.local_concrete_fields if not field.generated]


@cache
def _insert_sql(model: type[Model], alias: str) -> str:
    quote = connections[alias].ops.quote_name
    fields = _insert_fields(model)
    return (f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))})")


@cache
def _update_sql(model: type[Model], alias: str, names: tuple[str, ...]) -> str:
    quote, meta = connections[alias].ops.quote_name, model._meta
    assignments = ", ".join(f"{quote(meta.get_field(name).column)} = %s" for name in names)
    return f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s"
