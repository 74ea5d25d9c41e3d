"""GET /api/classes and GET /api/classes/{id}: a teacher's classes and their students' last runs."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from apps.accounts.roles import classes_of
from codefyui.api import ApiError, api, json_response

from . import board


@api("GET")
def classes(request: HttpRequest) -> HttpResponse:
    return json_response([{"id": c.pk, "name": c.name} for c in classes_of(request.user)])


@api("GET")
def class_detail(request: HttpRequest, class_id: int) -> HttpResponse:
    classroom = classes_of(request.user).filter(pk=class_id).first()
    if classroom is None:
        raise ApiError(404, f"class {class_id} not found")
    return json_response({"id": classroom.pk, "name": classroom.name,
                          "students": [board.as_json(r) for r in board.rows(classroom)]})
