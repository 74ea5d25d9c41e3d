"""The end of a class: ending it locks its students out (their work is kept), reopening lets
them in again, and the teacher can take everyone's saved graphs away as one zip file."""
from __future__ import annotations

import tempfile
import zipfile

from django.contrib import messages
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_POST

from apps.accounts import roster
from apps.graphs import document
from apps.graphs.models import Graph

from ..lookup import class_of, students


def _accounts(n: int) -> str:
    return f"{n} student account{'s' if n != 1 else ''}"


@require_POST
def end_class(request: HttpRequest, class_id: int) -> HttpResponse:
    classroom = class_of(request, class_id)
    locked = roster.end_class(classroom)
    messages.success(request, f"The class {classroom} has ended: {_accounts(locked)} can no longer log in. "
                              "Their work is kept; you can still download it, or reopen the class.")
    return redirect("classes:roster", class_id=classroom.pk)


@require_POST
def reopen_class(request: HttpRequest, class_id: int) -> HttpResponse:
    classroom = class_of(request, class_id)
    opened = roster.reopen_class(classroom)
    messages.success(request, f"The class {classroom} is open again: {_accounts(opened)} can log in.")
    return redirect("classes:roster", class_id=classroom.pk)


def graph_files(classroom):
    """(path in the zip, graph JSON) of every saved graph of the class's students: a folder
    per student, a file per graph, named after it (the same JSON as the editor writes)."""
    for student in students(classroom):
        used: set[str] = set()
        for graph in Graph.objects.filter(owner=student).order_by("name", "pk").iterator():
            stem = slugify(graph.name)[:60] or f"graph-{graph.pk}"
            if stem in used:
                stem = f"{stem}-{graph.pk}"
            used.add(stem)
            yield f"{student.get_username()}/{stem}.json", document.dumps(graph.document)


@require_GET
def export_zip(request: HttpRequest, class_id: int) -> FileResponse:
    """A zip of the students' saved graphs, written to a temporary file (a class's graphs
    can be large) and streamed from there."""
    classroom = class_of(request, class_id)
    spool = tempfile.TemporaryFile()
    with zipfile.ZipFile(spool, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, text in graph_files(classroom):
            archive.writestr(path, text)
    spool.seek(0)
    name = f"{slugify(classroom.name) or 'class'}-graphs.zip"
    return FileResponse(spool, as_attachment=True, filename=name, content_type="application/zip")
