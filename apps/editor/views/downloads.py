"""A run's captured outputs as files: a picture as PNG (shown by the card and the Inspector,
and downloaded from there), a tensor as .npy or CSV. Only the run's owner gets them (a
stranger's run id answers 404); files are streamed in pieces, so a capture of many millions
of numbers never becomes one more copy in the server's memory."""
from __future__ import annotations

import io
from uuid import UUID

import numpy as np
import torch
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from apps.graphs import document
from apps.graphs.nodes.library._images import PngImage
from apps.runs.models import Run
from apps.runs.store import StoreUnreachable, get_store
from codefyui.access import get_readable, note_look

CHUNK_ELEMENTS = 1 << 20          # numbers per streamed piece
CSV_MAX_CELLS = 10_000_000        # a bigger slice is offered as .npy only

NOT_KEPT = "This run's data is no longer kept (or was not recorded); run the graph again to download it."
NOT_A_PICTURE = "This output is not a picture."
NOT_A_TENSOR = "This output is not a tensor."


def _capture(request: HttpRequest, run_id: UUID, node_id: str, port: str):
    """The captured value, or a plain-text 404 answer (a stranger's run raises Http404)."""
    run = get_readable(Run.objects, request.user, run_id)
    note_look(request, run.owner_id, "download", run.pk)
    try:
        capture = get_store().get(str(run.id), node_id, port)
    except StoreUnreachable:
        return None, _text("The store of run data cannot be reached just now; try again in a moment.", 503)
    if capture is None:
        return None, _text(NOT_KEPT, 404)
    return capture.value, None


def _text(message: str, status: int) -> HttpResponse:
    return HttpResponse(message, content_type="text/plain; charset=utf-8", status=status)


def _name(node_id: str, port: str, suffix: str) -> str:
    return f"{slugify(node_id.replace('/', '-')) or 'node'}-{slugify(port) or 'output'}{suffix}"


def _attachment(response: HttpResponse, filename: str) -> HttpResponse:
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


@require_GET
def capture_png(request: HttpRequest, run_id: UUID, node_id: str, port: str) -> HttpResponse:
    """A picture output as image/png; with ?download=1 as a file to save."""
    value, refused = _capture(request, run_id, node_id, port)
    if refused:
        return refused
    if not isinstance(value, PngImage):
        return _text(NOT_A_PICTURE, 404)
    response = HttpResponse(value.data, content_type="image/png")
    response["Cache-Control"] = "private, max-age=3600"  # a capture never changes
    if request.GET.get("download"):
        title = slugify(value.title)[:60]
        _attachment(response, f"{title}.png" if title else _name(node_id, port, ".png"))
    return response


def _captured_tensor(request: HttpRequest, run_id: UUID, node_id: str, port: str):
    """The captured tensor on the CPU, or a plain-text answer saying why there is none."""
    value, refused = _capture(request, run_id, node_id, port)
    if refused:
        return None, refused
    if not isinstance(value, torch.Tensor):
        return None, _text(NOT_A_TENSOR, 404)
    return value.detach().cpu(), None  # the same tensor when it is on the CPU already


def _as_numpy(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:  # NumPy has no bfloat16: written as float32
        t = t.float()
    return t.contiguous().numpy()


def _pieces(t: torch.Tensor):
    """The tensor in pieces along its first dimension, each about CHUNK_ELEMENTS numbers."""
    if t.dim() == 0 or t.numel() == 0:
        yield t.reshape(-1)
        return
    row = max(1, t[0].numel())
    rows = max(1, CHUNK_ELEMENTS // row)
    yield from t.split(rows)


@require_GET
def capture_npy(request: HttpRequest, run_id: UUID, node_id: str, port: str) -> HttpResponse:
    """The whole tensor as NumPy's .npy (numpy.load reads it back), streamed in pieces."""
    t, refused = _captured_tensor(request, run_id, node_id, port)
    if refused:
        return refused
    dtype = _as_numpy(t.reshape(-1)[:0]).dtype
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        head, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": tuple(t.shape)})

    def body():
        yield head.getvalue()
        for piece in _pieces(t):
            yield _as_numpy(piece).tobytes()

    response = StreamingHttpResponse(body(), content_type="application/octet-stream")
    response["Content-Length"] = str(len(head.getvalue()) + t.numel() * dtype.itemsize)
    return _attachment(response, _name(node_id, port, ".npy"))


@require_GET
def capture_csv(request: HttpRequest, run_id: UUID, node_id: str, port: str) -> HttpResponse:
    """A 1-D tensor as one column, a 2-D one as rows; a bigger one as the 2-D slice the
    Inspector shows (``?s=0,1``: the leading indices), named so in the file name."""
    t, refused = _captured_tensor(request, run_id, node_id, port)
    if refused:
        return refused
    name = _name(node_id, port, "")
    if t.dim() > 2:
        asked = [int(m[1]) for p in request.GET.get("s", "").split(",") if (m := document.WHOLE_NUMBER.fullmatch(p))]
        lead = t.dim() - 2
        index = [min(max(0, i), t.shape[d] - 1) for d, i in enumerate((asked + [0] * lead)[:lead])]
        if t.numel() == 0:
            return _text("This tensor is empty: there is no slice to write.", 404)
        t = t[tuple(index)]
        name += "-slice-" + "-".join(map(str, index))
    if t.is_complex():
        return _text("A complex tensor has no CSV form here; download it as .npy.", 404)
    if t.numel() > CSV_MAX_CELLS:
        return _text(f"This slice has {t.numel():,} numbers, more than the {CSV_MAX_CELLS:,} a CSV download "
                     "holds; download it as .npy.", 413)
    table = t.reshape(-1, 1) if t.dim() <= 1 else t
    fmt = "%d" if not (t.is_floating_point()) else ("%.17g" if t.dtype == torch.float64 else "%.9g")

    def body():
        for piece in _pieces(table):
            text = io.StringIO()
            array = _as_numpy(piece)
            np.savetxt(text, array.astype(np.int64) if array.dtype == np.bool_ else array, fmt=fmt, delimiter=",")
            yield text.getvalue()

    response = StreamingHttpResponse(body(), content_type="text/csv; charset=utf-8")
    return _attachment(response, name + ".csv")
