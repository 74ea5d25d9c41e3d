"""The outputs JSON API (CodefyUI-compatible): captured ports of a run, one value with an
optional slice, and dropping a run's captures. Same permission rules as everything else: a
run you may not see does not exist."""
from __future__ import annotations

from typing import Any
from uuid import UUID

import torch
from django.http import HttpRequest, HttpResponse

from apps.runs.capture_api import GONE, port_endpoints, store_call, visible_run
from apps.graphs.nodes.reprs import short_repr
from apps.runs.engine.events import parameter_counts, value_kind
from apps.runs.store import Capture, get_store
from codefyui import heavy
from codefyui.api import ApiError, api, json_response

DEFAULT_MAX_ELEMENTS, MAX_ELEMENTS_CAP = 4096, 1_000_000
TEXT_LIMIT = 4000


@api("GET", "DELETE")
def run_outputs(request: HttpRequest, run_id: UUID) -> HttpResponse:
    run = visible_run(request, run_id)
    store = get_store()
    if request.method == "DELETE":
        if not store_call(store.drop_run, str(run.id)):
            raise ApiError(404, f"run '{run_id}' {GONE}")
        return json_response({"run_id": str(run.id), "deleted": True})
    ports = store_call(store.ports, str(run.id))
    if ports is None:
        raise ApiError(404, f"run '{run_id}' {GONE}")
    listing = []
    for node_id, port in ports:
        capture = store.get(str(run.id), node_id, port)
        value = capture.value if capture else None
        listing.append({"node_id": node_id, "port": port, "type": value_kind(value),
                        "full_shape": list(value.shape) if isinstance(value, torch.Tensor) else None})
    return json_response(listing)


def _value(request: HttpRequest, key: str, node_id: str, port: str, capture: Capture) -> HttpResponse:
    body = payload(capture.value, request.GET.get("slice", ""), _max_elements(request))
    return json_response({**body, "run_id": key, "node_id": node_id, "port": port})


port_value, port_value_by_query = port_endpoints(_value)


def _max_elements(request: HttpRequest) -> int:
    raw = request.GET.get("max_elements", "")
    if not raw:
        return DEFAULT_MAX_ELEMENTS
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, f"max_elements must be a whole number, not {raw!r}") from None
    if not 1 <= value <= MAX_ELEMENTS_CAP:
        raise ApiError(400, f"max_elements must be between 1 and {MAX_ELEMENTS_CAP:,}")
    return value


def parse_slice(text: str) -> tuple[Any, ...]:
    """'0,:,1:3' -> (0, slice(None), slice(1, 3)); one piece per leading dim."""
    pieces = []
    for piece in text.split(","):
        piece = piece.strip()
        try:
            if ":" in piece:
                parts = piece.split(":")
                if len(parts) > 3:
                    raise ValueError
                numbers = [int(p) if p.strip() else None for p in parts]
                pieces.append(slice(*numbers))
            elif piece == "":
                pieces.append(slice(None))
            else:
                pieces.append(int(piece))
        except ValueError:
            raise ApiError(400, f"invalid slice: {text!r}") from None
    return tuple(pieces)


def payload(value: Any, slice_text: str, max_elements: int) -> dict[str, Any]:
    kind = value_kind(value)
    if kind == "tensor":
        return _tensor(value, slice_text, max_elements)
    if slice_text:
        raise ApiError(400, f"invalid slice: a {kind} value cannot be sliced")
    if kind == "model":
        params, trainable = parameter_counts(value)
        return {"type": "model", "class": type(value).__name__, "params": params, "trainable": trainable,
                "repr": short_repr(value, TEXT_LIMIT)}
    if kind in ("scalar", "string"):
        return {"type": kind, "value": value[:TEXT_LIMIT] if kind == "string" else value}
    if kind == "list":
        body = {"type": "list", "length": len(value), "repr": short_repr(value, TEXT_LIMIT)}
        if len(value) <= 1024 and all(isinstance(v, (bool, int, float, str)) or v is None for v in value):
            body["values"] = list(value)
        return body
    return {"type": kind, "repr": short_repr(value, TEXT_LIMIT)}


def _tensor(t: torch.Tensor, slice_text: str, max_elements: int) -> dict[str, Any]:
    t = t.detach().cpu()
    part = t
    if slice_text:
        index = parse_slice(slice_text)
        try:
            part = t[index]
        except (IndexError, TypeError, RuntimeError, ValueError) as exc:
            raise ApiError(400, f"slice failed: {exc}") from None
    if part.numel() > max_elements:
        raise ApiError(413, f"output has {part.numel()} elements (max {max_elements}); supply a narrower 'slice' parameter")
    heavy.ahead_of(part)   # a million values as JSON: ~0.2 s, off the one request thread
    body: dict[str, Any] = {"type": "tensor", "full_shape": list(t.shape), "dtype": str(t.dtype),
                            "slice": slice_text or None, "sliced_shape": list(part.shape),
                            "values": part.tolist(), "truncated": False}
    if part.numel() and part.dtype != torch.bool and not part.is_complex():
        finite = part[torch.isfinite(part)] if part.is_floating_point() else part
        if finite.numel():
            lo, hi = torch.aminmax(finite)
            if part.is_floating_point():
                body.update(min=round(lo.item(), 6), max=round(hi.item(), 6),
                            mean=round(finite.mean(dtype=torch.float64).item(), 6))
            else:
                body.update(min=lo.item(), max=hi.item())
    return body
