"""My files: the student's own files on the server (what ModelSaver and CheckpointSaver write,
what ModelLoader and CheckpointLoader read): list, download, upload, delete. Only ever the
asking student's folder, so a stranger's file name is simply not found (404). The list is paged
(plain ?page=N links), so a student with many files gets a small page quickly."""
from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.runs import engine, service

PER_PAGE = 50  # files on one page of the list, newest first


def _mine(request: HttpRequest) -> engine.UserFiles:
    return service.user_files(request.user.pk)


def _found(files: engine.UserFiles, name: str) -> engine.StoredFile:
    found = files.find(name)
    if found is None:
        raise Http404("No such file")
    return found


@require_GET
def file_list(request: HttpRequest) -> HttpResponse:
    """One page of the files; a stale or mistyped ?page= shows the nearest page there is."""
    files = _mine(request)
    page = Paginator(files.list(), PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "editor/files.html", {"page": page, **_limits(files)})


def _limits(files: engine.UserFiles) -> dict:
    """What the files take of both limits (space as the disk allocates it, and the count)."""
    usage = files.usage()
    return {
        "used": engine.megabytes(usage.bytes), "quota": engine.megabytes(files.max_bytes),
        "used_bytes": usage.bytes, "quota_bytes": files.max_bytes,
        "percent": round(100 * usage.bytes / max(1, files.max_bytes)),
        "count": usage.files, "max_files": files.max_files,
        "count_percent": round(100 * usage.files / max(1, files.max_files)),
        "block_size": engine.megabytes(files.block_size()),
    }


@require_POST
def file_upload(request: HttpRequest) -> HttpResponse:
    upload = request.FILES.get("file")
    if upload is None:
        messages.error(request, "Choose a file to upload.")
        return redirect("editor:files")
    name = engine.clean_name(upload.name)
    files = _mine(request)
    replacing = files.find(name) is not None
    try:
        files.save(name, upload.chunks(), field="file", size=upload.size)
    except engine.FileRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Uploaded {name}{' (it replaced the file of that name)' if replacing else ''}.")
    return redirect("editor:files")


@require_GET
def file_download(request: HttpRequest, name: str) -> FileResponse:
    files = _mine(request)
    found = _found(files, name)
    try:
        return FileResponse(open(files.folder / found.name, "rb"), as_attachment=True, filename=found.name)
    except FileNotFoundError:  # deleted a moment ago (another window, a run)
        raise Http404("No such file") from None


@require_http_methods(["GET", "POST"])
def file_delete(request: HttpRequest, name: str) -> HttpResponse:
    """GET asks to confirm; POST deletes."""
    files = _mine(request)
    found = _found(files, name)
    if request.method == "GET":
        return render(request, "editor/file_delete.html", {"file": found})
    files.delete(found.name)
    messages.success(request, f"Deleted {found.name}.")
    return redirect("editor:files")
