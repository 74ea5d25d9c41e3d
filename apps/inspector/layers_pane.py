"""The Layers pane of a SequentialModel's Node details: its layers in computing order, each
with its params and the shape after it, worked out for the input the model received in the
inspected run when it was recorded, else for the sample input shape the student gives."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apps.graphs import document, edits, layer_edits, layers
from apps.graphs.nodes.base import ParamError

from .panel import Inspection
from .values import shape_text

LAST_RUN, SAMPLE = "the input the model received in this run", "the sample input shape"


@dataclass
class LayerRow:
    id: str
    type: str
    fields: list[dict[str, Any]]                   # {"param": Param, "value": ...} for the form
    sources: list[str] = field(default_factory=list)  # set when it is not simply the layer above
    shape: str = ""
    error: str = ""
    can_up: bool = False
    can_down: bool = False


def layers_view(ins: Inspection) -> dict[str, Any]:
    node = edits.find_node(ins.doc, ins.node_id)
    try:
        raw = layer_edits.spec_of(node)
    except edits.EditError as exc:
        return {"unreadable": str(exc)}
    try:
        spec, problem = layers.parse(raw), ""
    except ParamError as exc:
        spec, problem = None, str(exc)
    seen, sample = received_shapes(ins), layer_edits.sample_shape(node)
    if seen:
        shapes, source = seen, LAST_RUN
    elif sample:
        shapes, source = [sample], SAMPLE
    else:
        shapes, source = [], ""
    traced = layers.trace_shapes(spec, shapes) if spec and shapes and len(shapes) == len(spec.inputs) else {}
    rows = _rows(raw, spec, traced)
    return {
        "rows": rows, "problem": problem or traced.get("", ""),
        "inputs": [(name, shape_text(shape)) for (_, name), shape in zip(spec.inputs, shapes)] if traced else [],
        "source": source, "sample": ", ".join(map(str, sample or (seen[0] if seen else []))),
        "types": _types(),
        "after": ([(spec.input_id, "the input")] if spec else []) + [(r.id, f"{r.id} ({r.type})") for r in rows],
        "last": layer_edits.last_layer(raw) if spec else "",
    }


def received_shapes(ins: Inspection) -> list[list[int]] | None:
    """What the model was called with in the inspected run: its own recorded output, or the
    MODEL a node it feeds (a TrainingLoop) hands on, remembers the last call's inputs."""
    seen, waiting = set(), [(ins.node_id, "model")]
    while waiting:
        producer, port = waiting.pop(0)
        if (producer, port) in seen:
            continue
        seen.add((producer, port))
        value = ins.lookup(producer, port)
        shapes = getattr(value, "seen_input_shapes", None) if isinstance(value, layers.LayerGraph) else None
        if shapes:
            return shapes
        for edge in ins.doc["edges"]:
            if edge["source"] == producer and edge["sourceHandle"] == port and not document.is_trigger(edge):
                target = edits.find_node(ins.doc, edge["target"])
                cls = edits.node_class(target)
                if cls is not None:
                    waiting += [(target["id"], p.name) for p in cls.output_ports(edits.params_of(target))
                                if p.type == "MODEL"]
    return None


def _rows(raw: dict[str, Any], spec: layers.Spec | None, traced: dict[str, Any]) -> list[LayerRow]:
    """Every layer, in computing order when the graph is sound, else as the file lists them."""
    by_id = {n.get("id"): n for n in raw["nodes"] if isinstance(n, dict)}
    if spec is not None:
        order = [(s.id, [src for src, _ in s.sources]) for s in spec.steps]
    else:
        order = [(i, []) for i, n in by_id.items() if n.get("type") not in (layers.INPUT, layers.OUTPUT)]
    rows, above = [], spec.input_id if spec else None
    for layer_id, sources in order:
        node = by_id[layer_id]
        type_key = str(node.get("type", ""))
        given = node.get("params") if isinstance(node.get("params"), dict) else {}
        row = LayerRow(layer_id, type_key, [{"param": p, "value": given.get(p.name, p.default)}
                                            for p in layers.declared_params(type_key)],
                       sources=[] if sources == [above] else [_source_label(s, spec) for s in sources],
                       can_up=layer_edits.can_move(raw, layer_id, "up"),
                       can_down=layer_edits.can_move(raw, layer_id, "down"))
        found = traced.get(layer_id)
        if isinstance(found, list):
            row.shape = shape_text(found)
        elif isinstance(found, str):
            row.error = found
        rows.append(row)
        above = layer_id
    return rows


def _source_label(source: str, spec: layers.Spec | None) -> str:
    return "the input" if spec is not None and source == spec.input_id else source


def _types() -> list[tuple[str, list[str]]]:
    groups: dict[str, list[str]] = {}
    for kind in layers.LAYER_TYPES.values():
        groups.setdefault(kind.group, []).append(kind.name)
    return list(groups.items())


def has_layers(cls) -> bool:
    return cls is not None and any(p.kind == "layers" for p in cls.params)
