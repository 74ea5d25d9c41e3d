"""Pure edits of a SequentialModel's layer graph, for the Layers editor: add, remove, move
and set a layer, and the sample input shape its shapes are worked out for. Each takes a
document and returns a changed copy (the graph written back as CodefyUI's JSON text), or
raises EditError. An edit may not break a layer graph that was sound; one that was already
broken (an imported file) can still be mended. No Django here.
"""
from __future__ import annotations

import copy
import re
from typing import Any

from . import document, layers
from .edits import EditError, add_node, find_node, params_of
from .nodes.base import ParamError, parse_int_list

SAMPLE_SHAPE = "inputShape"   # in the node's data, beside its params: not part of the model
MAX_SAMPLE_RANK, MAX_SAMPLE_SIZE = 6, 1_000_000


def spec_of(node: dict[str, Any]) -> dict[str, Any]:
    """A SequentialModel node's layer graph as an object (EditError if it cannot be read)."""
    if node["type"] != "SequentialModel":
        raise EditError(f"{node['id']} is not a SequentialModel; only a SequentialModel has layers.")
    try:
        return layers.load(node["data"].get("params", {}).get("layers", ""))
    except ParamError as exc:
        raise EditError(f"The layers of {node['id']} cannot be read: {exc}") from None


def sample_shape(node: dict[str, Any]) -> list[int] | None:
    try:
        return _shape(node.get("data", {}).get(SAMPLE_SHAPE, ""))
    except EditError:
        return None


def _edit(doc: dict[str, Any], node_id: str, change) -> tuple[dict[str, Any], Any]:
    doc = copy.deepcopy(doc)
    node = find_node(doc, node_id)
    spec = spec_of(node)
    was_sound = _sound(spec) is None
    made = change(spec)
    problem = _sound(spec)
    if was_sound and problem:
        raise EditError(problem)
    node["data"]["params"]["layers"] = layers.dumps(spec)
    return doc, made


def _sound(spec: dict[str, Any]) -> str | None:
    try:
        layers.parse(spec)
    except ParamError as exc:
        return str(exc)
    return None


def _layer(spec: dict[str, Any], layer_id: str) -> dict[str, Any]:
    node = next((n for n in spec["nodes"] if isinstance(n, dict) and n.get("id") == layer_id), None)
    if node is None:
        raise EditError(f"There is no layer '{layer_id}' (it may have been removed).")
    return node


def _sources(spec, layer_id) -> list[dict[str, Any]]:
    return [e for e in spec["edges"] if e.get("target") == layer_id]


def _consumers(spec, layer_id) -> list[dict[str, Any]]:
    return [e for e in spec["edges"] if e.get("source") == layer_id]


def _new_id(spec: dict[str, Any], stem: str) -> str:
    stem = re.sub(r"[^a-z0-9]+", "", stem.lower()) or "layer"
    taken = {n.get("id") for n in spec["nodes"] if isinstance(n, dict)} | {e.get("id") for e in spec["edges"]}
    n = 1
    while f"{stem}{n}" in taken:
        n += 1
    return f"{stem}{n}"


def last_layer(spec: dict[str, Any]) -> str:
    """What feeds the Output's first port: where a new layer goes by default."""
    output = next(n for n in spec["nodes"] if n.get("type") == layers.OUTPUT)
    into = _sources(spec, output["id"])
    return into[0]["source"] if into else next(n["id"] for n in spec["nodes"] if n.get("type") == layers.INPUT)


def add_layer(doc: dict[str, Any], node_id: str, type_key: str, after: str = "") -> tuple[dict, str]:
    """A new layer (its params at their defaults) right after ``after`` (a layer, or the Input):
    it takes over what that fed. Without ``after``, just before the Output."""
    if type_key not in layers.LAYER_TYPES:
        raise EditError(f"Unknown layer type: {type_key or 'none chosen'}.")

    def add(spec):
        where = after or last_layer(spec)
        previous = _layer(spec, where)
        if previous.get("type") == layers.OUTPUT:
            raise EditError("Nothing can come after the Output.")
        new = {"id": _new_id(spec, type_key),
               "type": type_key, "params": {p.name: p.default for p in layers.declared_params(type_key)}}
        leaving = _consumers(spec, where)
        handle = leaving[0].get("sourceHandle") if leaving else None
        for edge in leaving:
            edge["source"], edge["sourceHandle"] = new["id"], None
        spec["edges"].append({"id": _new_id(spec, "e"), "source": where, "sourceHandle": handle, "target": new["id"]})
        spec["nodes"].insert(spec["nodes"].index(previous) + 1, new)
        return new["id"]
    return _edit(doc, node_id, add)


def remove_layer(doc: dict[str, Any], node_id: str, layer_id: str) -> dict:
    """Remove a layer; what it fed is fed by its (first) input instead."""
    def remove(spec):
        layer = _layer(spec, layer_id)
        if layer.get("type") in (layers.INPUT, layers.OUTPUT):
            raise EditError(f"The {layer['type']} cannot be removed.")
        into = _sources(spec, layer_id)
        for edge in _consumers(spec, layer_id):
            if into:
                edge["source"], edge["sourceHandle"] = into[0]["source"], into[0].get("sourceHandle")
            else:
                spec["edges"].remove(edge)
        spec["edges"] = [e for e in spec["edges"] if e.get("target") != layer_id]
        spec["nodes"].remove(layer)
    return _edit(doc, node_id, remove)[0]


def move_layer(doc: dict[str, Any], node_id: str, layer_id: str, direction: str) -> dict:
    """Swap a layer with the one before it ("up") or after it ("down") in its chain."""
    def move(spec):
        _layer(spec, layer_id)
        pair = _pair(spec, layer_id, direction)
        if pair is None:
            raise EditError(f"Layer '{layer_id}' cannot move {direction}: it can only swap places with a "
                            "layer next to it in a chain (not with the Input, the Output, or across a branch).")
        upper, lower = pair
        into, between = _sources(spec, upper["id"])[0], _sources(spec, lower["id"])[0]
        for edge in _consumers(spec, lower["id"]):
            edge["source"] = upper["id"]
        into["target"] = lower["id"]
        between["source"], between["target"] = lower["id"], upper["id"]
        i, j = spec["nodes"].index(upper), spec["nodes"].index(lower)
        spec["nodes"][i], spec["nodes"][j] = lower, upper
    return _edit(doc, node_id, move)[0]


def can_move(spec: dict[str, Any], layer_id: str, direction: str) -> bool:
    return _pair(spec, layer_id, direction) is not None


def _pair(spec, layer_id: str, direction: str) -> tuple[dict, dict] | None:
    """The two layers a move swaps, (upper, lower), where ``lower`` follows ``upper`` alone:
    one edge between them and no other way out of ``upper`` or into ``lower``."""
    if direction == "up":
        into = _sources(spec, layer_id)
        ids = (into[0].get("source"), layer_id) if len(into) == 1 else None
    elif direction == "down":
        out = _consumers(spec, layer_id)
        ids = (layer_id, out[0].get("target")) if len(out) == 1 else None
    else:
        raise EditError(f"A layer moves up or down, not {direction!r}.")
    if ids is None:
        return None
    nodes = {n.get("id"): n for n in spec["nodes"] if isinstance(n, dict)}
    upper, lower = nodes.get(ids[0]), nodes.get(ids[1])
    if upper is None or lower is None or {upper.get("type"), lower.get("type")} & {layers.INPUT, layers.OUTPUT}:
        return None
    if len(_consumers(spec, upper["id"])) != 1 or len(_sources(spec, lower["id"])) != 1:
        return None
    if len(_sources(spec, upper["id"])) != 1:
        return None
    return upper, lower


def set_layer_params(doc: dict[str, Any], node_id: str, layer_id: str, raw: dict[str, str]) -> dict:
    """Set a layer's params from form text; every bad value is named and nothing is saved."""
    def set_params(spec):
        layer = _layer(spec, layer_id)
        declared = layers.declared_params(layer.get("type", ""))
        params, problems = dict(layer.get("params") or {}), []
        for param in declared:
            if param.name in raw:
                try:
                    params[param.name] = param.coerce(raw[param.name])
                except ParamError as exc:
                    problems.append(str(exc))
        if problems:
            raise EditError(f"Layer '{layer_id}' ({layer.get('type')}): " + "; ".join(problems))
        layer["params"] = params
    return _edit(doc, node_id, set_params)[0]


def set_sample_shape(doc: dict[str, Any], node_id: str, text: str) -> dict:
    """The input shape the Layers editor works the shapes out for, until a run shows the real one."""
    doc = copy.deepcopy(doc)
    node = find_node(doc, node_id)
    spec_of(node)
    shape = _shape(text)
    node["data"][SAMPLE_SHAPE] = ", ".join(map(str, shape))
    return doc


def _shape(text: Any) -> list[int]:
    try:
        shape = parse_int_list(text, "input shape")
    except ParamError as exc:
        raise EditError(str(exc)) from None
    if len(shape) > MAX_SAMPLE_RANK or not all(1 <= s <= MAX_SAMPLE_SIZE for s in shape):
        raise EditError(f"'input shape' needs 1 to {MAX_SAMPLE_RANK} sizes, each from 1 to {MAX_SAMPLE_SIZE:,}, "
                        f"not {text!r}")
    return shape


# -- layer nodes on the canvas as a model ---------------------------------------------------

# Canvas layer nodes whose params are the layer's own (CodefyUI's import of canvas layers).
SAME_LAYER = ("Conv2d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "Dropout", "BatchNorm2d",
              "Linear", "Flatten", "Embedding")
ACTIVATION_LAYERS = {"relu": "ReLU", "sigmoid": "Sigmoid", "tanh": "Tanh", "leaky_relu": "LeakyReLU",
                     "elu": "ELU", "gelu": "GELU", "silu": "SiLU", "mish": "Mish", "selu": "SELU",
                     "softmax": "Softmax", "hardswish": "Hardswish", "prelu": "PReLU"}
MERGE_NODES = ("Add", "Multiply", "Concat", "Stack")


def as_layer(node: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A canvas node as (layer type, params) of a layer graph, or EditError saying why not."""
    type_key, params, name = node["type"], params_of(node), f"{document.node_label(node)} ({node['id']})"
    if type_key in SAME_LAYER or type_key in MERGE_NODES:
        if type_key == "Add" and params.get("alpha") != 1:
            raise EditError(f"{name} adds alpha × the second input; in a model Add uses alpha 1.")
        declared = {p.name for p in layers.declared_params(type_key)}
        return type_key, {k: v for k, v in params.items() if k in declared}
    if type_key == "Activation":
        return ACTIVATION_LAYERS[params["function"]], {}
    if type_key == "AdaptiveAvgPool2d":
        if params["output_height"] != params["output_width"]:
            raise EditError(f"{name}: a model's AdaptiveAvgPool2d makes square maps; set output_height "
                            "and output_width to the same size.")
        return type_key, {"output_size": params["output_height"]}
    if type_key == "LayerNorm":
        sizes = _shape(params["normalized_shape"])
        if len(sizes) != 1:
            raise EditError(f"{name}: a model's LayerNorm normalises the last dimension; give one size.")
        return type_key, {"normalized_shape": sizes[0], "eps": params["eps"]}
    raise EditError(f"{name} is not a layer, so it cannot go into a model; select only layers "
                    "(Conv2d, Linear, Activation, …) and the Add or Concat nodes that join them.")


def model_from_nodes(doc: dict[str, Any], node_ids: set[str]) -> tuple[dict, str]:
    """A SequentialModel made of the chosen canvas layers, placed beside them (they stay):
    the edges between them become its layer graph, the layers fed from outside it read its
    input (one input per such layer), and the last layer in computing order gives its
    output, as CodefyUI imports canvas layers. Layers not wired to each other at all go in a
    row, left to right as the canvas shows them. Its weights start fresh."""
    chosen = [n for n in doc["nodes"] if n["id"] in node_ids]
    if not chosen:
        raise EditError("Select the layer nodes to make a model of.")
    converted = {n["id"]: as_layer(n) for n in chosen}
    inner = [e for e in doc["edges"] if e["source"] in converted and e["target"] in converted
             and not document.is_trigger(e)]
    if not inner:
        row = sorted(chosen, key=lambda n: (n["position"]["x"], n["position"]["y"]))
        spec = layers.chain_of([(_layer_id(n["id"]), *converted[n["id"]]) for n in row])
        return _add_model(doc, chosen, spec)
    fed = {e["target"] for e in inner}
    roots = [n["id"] for n in chosen if n["id"] not in fed]
    ports = [{"id": f"p_x{i}" if i else "p_x", "name": f"x{i + 1}" if i else "x"} for i in range(len(roots))]
    spec_nodes = [{"id": "in", "type": layers.INPUT, "ports": ports}]
    spec_nodes += [{"id": _layer_id(i), "type": t, "params": p} for i, (t, p) in converted.items()]
    spec_nodes.append({"id": "out", "type": layers.OUTPUT, "ports": [{"id": "p_y", "name": "y"}]})
    position = {n["id"]: k for k, n in enumerate(chosen)}
    edges = [{"id": f"e{k}", "source": "in", "sourceHandle": port["id"], "target": _layer_id(root)}
             for k, (root, port) in enumerate(zip(roots, ports), 1)]
    for e in sorted(inner, key=lambda e: (position[e["target"]], e["targetHandle"])):  # tensor_a before tensor_b
        edges.append({"id": f"e{len(edges) + 1}", "source": _layer_id(e["source"]), "target": _layer_id(e["target"])})
    spec = {"version": 2, "nodes": spec_nodes, "edges": edges}
    try:  # the order the layers compute in, with the Output fed by the input for now
        order = layers.parse({**spec, "edges": edges + [{"id": "last", "source": "in", "sourceHandle": "p_x",
                                                        "target": "out", "targetHandle": "p_y"}]}).steps
    except ParamError as exc:
        raise EditError(f"These layers do not make a model: {exc}") from None
    edges.append({"id": f"e{len(edges) + 1}", "source": order[-1].id, "target": "out", "targetHandle": "p_y"})
    return _add_model(doc, chosen, spec)


def _add_model(doc: dict[str, Any], beside: list[dict[str, Any]], spec: dict[str, Any]) -> tuple[dict, str]:
    x = max(n["position"]["x"] for n in beside) + 240
    y = min(n["position"]["y"] for n in beside)
    doc, model_id = add_node(doc, "SequentialModel", x, y)
    find_node(doc, model_id)["data"]["params"]["layers"] = layers.dumps(spec)
    return doc, model_id


def _layer_id(node_id: str) -> str:
    """A canvas node id as a layer id (a layer id holds no dots; a block's inner ids hold "/")."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", node_id)
