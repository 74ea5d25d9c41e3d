"""A model's layer graph: CodefyUI's layer-DAG JSON ("version 2"), the layer types it may
hold, and the ``nn.Module`` built from it (the SequentialModel node's model).

A spec is ``{"version": 2, "nodes": [...], "edges": [...]}``: one ``Input`` node whose
ports are the model's inputs, one ``Output`` node whose ports are its outputs, plain layers
(one input each) and merges (Add, Concat, Multiply, Subtract, Mean, Stack) that join
branches. Edges from the Input name its port in ``sourceHandle``; edges into the Output name
its port in ``targetHandle``. An older plain list of layers (``[{"type": "Linear",
"in_features": 4, ...}, ...]``) is read as a chain. Every problem is a ``ParamError`` whose
message names the layer. No Django here.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn

from .nodes.base import Param, ParamError, parse_int_list

INPUT, OUTPUT = "Input", "Output"


# -- layer types ----------------------------------------------------------------------------

@dataclass(frozen=True)
class LayerType:
    """One kind of layer: its params (named as PyTorch's arguments) and how it is built."""

    name: str
    group: str
    build: Callable[..., nn.Module]
    params: tuple[Param, ...] = ()
    # Why an input of this shape does not fit (None when it does), for messages that say
    # "Linear expects 128 features, gets 392" instead of torch's matrix sizes.
    misfit: Callable[[dict[str, Any], torch.Size], str | None] = lambda params, shape: None


def _int(name: str, default: int, help: str, low: int = 1) -> Param:
    return Param(name, "int", default, help, min=low)


def _eps() -> Param:
    return Param("eps", "float", 1e-5, "Small number added to the variance", min=0.0)


def _last_dim(param: str, what: str) -> Callable:
    def misfit(params, shape):
        if len(shape) == 0 or shape[-1] != params[param]:
            got = shape[-1] if len(shape) else "none"
            return f"expects {params[param]} {what}, gets {got}"
        return None
    return misfit


def _channels(param: str, rank: int, layout: str) -> Callable:
    def misfit(params, shape):
        if len(shape) not in (rank, rank + 1):
            return f"expects a {rank + 1}-D input {layout}, gets {len(shape)}-D {_shape(shape)}"
        if shape[-rank] != params[param]:
            return f"expects {params[param]} channels, gets {shape[-rank]}"
        return None
    return misfit


class Reshape(nn.Module):
    """Reshapes each sample, keeping the batch dimension (CodefyUI's ``shape`` is text)."""

    def __init__(self, shape: str = "-1"):
        super().__init__()
        self.shape = parse_int_list(shape, "shape")

    def forward(self, x):
        return x.reshape(x.size(0), *self.shape)


class SelectIndex(nn.Module):
    """Picks one position along a dimension, e.g. the first token of a sequence."""

    def __init__(self, dim: int = 1, index: int = 0):
        super().__init__()
        self.dim, self.index = dim, index

    def forward(self, x):
        return x.select(self.dim, self.index)


class TransformerEncoder(nn.Module):
    def __init__(self, d_model: int = 512, nhead: int = 8, num_layers: int = 1,
                 dim_feedforward: int = 2048):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


class TransformerDecoder(nn.Module):
    """A decoder attending to its own input (there is no separate memory in a chain)."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_layers: int = 1,
                 dim_feedforward: int = 2048):
        super().__init__()
        layer = nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward, batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, num_layers)

    def forward(self, x):
        return self.decoder(x, x)


class LSTM(nn.Module):
    """A recurrent layer that hands on its output sequence and drops its final state."""

    kind = nn.LSTM

    def __init__(self, **options):
        super().__init__()
        self.inner = self.kind(**options)

    def forward(self, x):
        return self.inner(x)[0]


class GRU(LSTM):
    kind = nn.GRU


class MultiHeadAttention(nn.Module):
    """Self-attention: the input is query, key and value."""

    def __init__(self, embed_dim: int = 512, num_heads: int = 8):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x)[0]


_CONV = (_int("in_channels", 1, "Channels of the input"),
         _int("out_channels", 32, "How many filters, i.e. output channels"),
         _int("kernel_size", 3, "Width of each filter"),
         _int("stride", 1, "Step between filter positions"),
         _int("padding", 0, "Zeros added around the border", 0))
_RNN = (_int("input_size", 128, "Features per time step"),
        _int("hidden_size", 256, "Size of the memory vector"),
        _int("num_layers", 1, "Recurrent layers stacked"),
        Param("batch_first", "bool", False, "Input is [batch, time, features] (else [time, batch, features])"),
        Param("bidirectional", "bool", False, "Also read the sequence backwards"))
_TRANSFORMER = (_int("d_model", 512, "Features per position"), _int("nhead", 8, "Attention heads"),
                _int("num_layers", 1, "Blocks stacked"),
                _int("dim_feedforward", 2048, "Width of each block's feed-forward layer"))
_POOL = (_int("kernel_size", 2, "Window width and height"),
         _int("stride", 0, "Step between windows; 0: the kernel size", 0))
_WIDTH = _last_dim("in_features", "features")

LAYER_TYPES: dict[str, LayerType] = {t.name: t for t in (
    LayerType("Linear", "Linear", nn.Linear,
              (_int("in_features", 512, "Numbers in each input row"),
               _int("out_features", 10, "Numbers in each output row"),
               Param("bias", "bool", True, "Learn a bias for each output")), _WIDTH),
    LayerType("Embedding", "Linear", nn.Embedding,
              (_int("num_embeddings", 10000, "Vocabulary size"),
               _int("embedding_dim", 256, "Length of each vector"))),
    LayerType("Conv2d", "Convolution", nn.Conv2d, _CONV, _channels("in_channels", 3, "[batch, channels, height, width]")),
    LayerType("Conv1d", "Convolution", nn.Conv1d, _CONV, _channels("in_channels", 2, "[batch, channels, length]")),
    LayerType("ConvTranspose2d", "Convolution", nn.ConvTranspose2d,
              _CONV + (_int("output_padding", 0, "Extra rows/columns on one side", 0),),
              _channels("in_channels", 3, "[batch, channels, height, width]")),
    LayerType("BatchNorm2d", "Normalization", nn.BatchNorm2d,
              (_int("num_features", 32, "Channels of the input"), _eps()),
              _channels("num_features", 3, "[batch, channels, height, width]")),
    LayerType("BatchNorm1d", "Normalization", nn.BatchNorm1d,
              (_int("num_features", 32, "Features of the input"), _eps()),
              lambda params, shape: None if len(shape) in (2, 3) and shape[1] == params["num_features"]
              else f"expects {params['num_features']} features in dimension 1, gets "
                   f"{shape[1] if len(shape) > 1 else 'none'}"),
    LayerType("LayerNorm", "Normalization", nn.LayerNorm,
              (_int("normalized_shape", 512, "Size of the last dimension"), _eps()),
              _last_dim("normalized_shape", "features")),
    LayerType("GroupNorm", "Normalization", nn.GroupNorm,
              (_int("num_groups", 8, "Groups the channels are split into"),
               _int("num_channels", 32, "Channels of the input"), _eps())),
    LayerType("InstanceNorm2d", "Normalization", nn.InstanceNorm2d,
              (_int("num_features", 32, "Channels of the input"), _eps(),
               Param("affine", "bool", False, "Learn a scale and shift per channel"))),
    LayerType("MaxPool2d", "Pooling", lambda kernel_size, stride: nn.MaxPool2d(kernel_size, stride or None), _POOL),
    LayerType("AvgPool2d", "Pooling", lambda kernel_size, stride: nn.AvgPool2d(kernel_size, stride or None), _POOL),
    LayerType("AdaptiveAvgPool2d", "Pooling", nn.AdaptiveAvgPool2d,
              (_int("output_size", 1, "Height and width of the result"),)),
    LayerType("Dropout", "Regularization", nn.Dropout,
              (Param("p", "float", 0.5, "Chance that each number is set to 0", min=0.0, max=1.0),)),
    LayerType("Flatten", "Utility", nn.Flatten,
              (Param("start_dim", "int", 1, "First dimension to flatten"),)),
    LayerType("Reshape", "Utility", Reshape,
              (Param("shape", "string", "-1", "Sizes of each sample, by commas (the batch stays)"),)),
    LayerType("SelectIndex", "Utility", SelectIndex,
              (Param("dim", "int", 1, "Dimension to pick from"), Param("index", "int", 0, "Position to keep"))),
    LayerType("LSTM", "Recurrent", LSTM, _RNN),
    LayerType("GRU", "Recurrent", GRU, _RNN),
    LayerType("MultiHeadAttention", "Transformer", MultiHeadAttention,
              (_int("embed_dim", 512, "Features per position"), _int("num_heads", 8, "Attention heads")),
              _last_dim("embed_dim", "features")),
    LayerType("TransformerEncoder", "Transformer", TransformerEncoder, _TRANSFORMER, _last_dim("d_model", "features")),
    LayerType("TransformerDecoder", "Transformer", TransformerDecoder, _TRANSFORMER, _last_dim("d_model", "features")),
    LayerType("ReLU", "Activation", nn.ReLU),
    LayerType("LeakyReLU", "Activation", nn.LeakyReLU,
              (Param("negative_slope", "float", 0.01, "How much of a negative number is kept"),)),
    LayerType("GELU", "Activation", nn.GELU),
    LayerType("SiLU", "Activation", nn.SiLU),
    LayerType("Mish", "Activation", nn.Mish),
    LayerType("ELU", "Activation", nn.ELU, (Param("alpha", "float", 1.0, "Where negatives level off: -alpha"),)),
    LayerType("SELU", "Activation", nn.SELU),
    LayerType("PReLU", "Activation", nn.PReLU),
    LayerType("Sigmoid", "Activation", nn.Sigmoid),
    LayerType("Tanh", "Activation", nn.Tanh),
    LayerType("Hardswish", "Activation", nn.Hardswish),
    LayerType("Softmax", "Activation", lambda dim=-1: nn.Softmax(dim=dim),
              (Param("dim", "int", -1, "Dimension whose numbers sum to 1"),)),
)}


# -- merges ---------------------------------------------------------------------------------

def _fold(op: Callable) -> Callable:
    def merge(tensors, params):
        out = tensors[0]
        for t in tensors[1:]:
            out = op(out, t)
        return out
    return merge


@dataclass(frozen=True)
class MergeType:
    name: str
    apply: Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]
    fewest: int = 2
    most: int | None = None
    params: tuple[Param, ...] = ()


_DIM = (Param("dim", "int", 1, "Dimension to join along"),)

MERGE_TYPES: dict[str, MergeType] = {m.name: m for m in (
    MergeType("Add", _fold(torch.add)),
    MergeType("Multiply", _fold(torch.mul)),
    MergeType("Subtract", lambda ts, p: ts[0] - ts[1], 2, 2),
    MergeType("Mean", lambda ts, p: torch.stack(ts).mean(dim=0)),
    MergeType("Concat", lambda ts, p: torch.cat(ts, dim=p["dim"]), 1, None, _DIM),
    MergeType("Stack", lambda ts, p: torch.stack(ts, dim=p["dim"]), 1, None, _DIM),
)}


def declared_params(type_key: str) -> tuple[Param, ...]:
    kind = LAYER_TYPES.get(type_key) or MERGE_TYPES.get(type_key)
    return kind.params if kind else ()


# -- reading a spec -------------------------------------------------------------------------

@dataclass
class Step:
    """One layer or merge of a parsed spec, in the order the model computes them."""

    id: str
    type: str
    params: dict[str, Any]            # every declared param: the file's, coerced, or the default
    sources: list[tuple[str, str | None]] = field(default_factory=list)  # (node, Input port id)

    @property
    def merge(self) -> bool:
        return self.type in MERGE_TYPES

    @property
    def name(self) -> str:
        return f"Layer '{self.id}' ({self.type})"


@dataclass
class Spec:
    steps: list[Step]                       # layers and merges, in computing order
    input_id: str
    inputs: list[tuple[str, str]]           # (port id, name)
    outputs: list[tuple[str, tuple[str, str | None]]]  # (name, source)


def load(value: Any) -> dict[str, Any]:
    """A ``layers`` param (JSON text, an object, or an older list) as a v2 spec object."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ParamError(f"'layers' is not valid JSON ({exc.msg} at character {exc.pos})") from None
    if isinstance(value, list):
        if not all(isinstance(item, dict) for item in value):
            raise ParamError("'layers' as a list must hold one object per layer")
        return chain(value)
    if not isinstance(value, dict):
        raise ParamError("'layers' must be a layer graph (an object with version, nodes and edges)")
    if value.get("version") != 2:
        raise ParamError(f"'layers' has version {value.get('version')!r}; only version 2 layer graphs "
                         "are understood")
    if not isinstance(value.get("nodes"), list) or not isinstance(value.get("edges"), list):
        raise ParamError("'layers' needs a list of nodes and a list of edges")
    return value


def chain(layers: list[dict[str, Any]]) -> dict[str, Any]:
    """CodefyUI's older format, each item ``{"type": ..., **params}``, as a spec."""
    return chain_of([(f"layer{i}", item.get("type", ""), {k: v for k, v in item.items() if k != "type"})
                     for i, item in enumerate(layers, 1)])


def chain_of(layers: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    """A spec of (id, type, params) layers in a row, from the Input's x to the Output's y."""
    nodes = [{"id": "in", "type": INPUT, "ports": [{"id": "p_x", "name": "x"}]}]
    nodes += [{"id": i, "type": t, **({"params": p} if p else {})} for i, t, p in layers]
    nodes.append({"id": "out", "type": OUTPUT, "ports": [{"id": "p_y", "name": "y"}]})
    edges = []
    for k, (a, b) in enumerate(zip(nodes, nodes[1:]), 1):
        edge = {"id": f"e{k}", "source": a["id"], "target": b["id"]}
        if a["type"] == INPUT:
            edge["sourceHandle"] = "p_x"
        if b["type"] == OUTPUT:
            edge["targetHandle"] = "p_y"
        edges.append(edge)
    return {"version": 2, "nodes": nodes, "edges": edges}


def dumps(spec: dict[str, Any]) -> str:
    """A spec as the compact JSON text CodefyUI keeps in the ``layers`` param."""
    return json.dumps(spec, separators=(",", ":"))


def parse(value: Any) -> Spec:
    """Check a spec thoroughly and put its layers in computing order."""
    raw = load(value)
    nodes: dict[str, dict[str, Any]] = {}
    for i, node in enumerate(raw["nodes"]):
        node_id = node.get("id") if isinstance(node, dict) else None
        if not isinstance(node_id, str) or not node_id or "." in node_id:
            raise ParamError(f"Layer {i + 1} needs an id (text without dots)")
        if node_id in nodes:
            raise ParamError(f"Layer id '{node_id}' is used twice")
        nodes[node_id] = node
    boundary = {kind: [n for n in nodes.values() if n.get("type") == kind] for kind in (INPUT, OUTPUT)}
    for kind, found in boundary.items():
        if len(found) != 1:
            raise ParamError(f"A layer graph needs exactly one {kind} node, not {len(found)}")
    entry, exit_ = boundary[INPUT][0], boundary[OUTPUT][0]
    inputs, outputs = _ports(entry), _ports(exit_)

    steps = {i: _step(n) for i, n in nodes.items() if n not in (entry, exit_)}
    into_output: dict[str, list[tuple[str, str | None]]] = {port: [] for port, _ in outputs}
    used_inputs = set()
    for k, edge in enumerate(raw["edges"]):
        source, target = (edge.get("source"), edge.get("target")) if isinstance(edge, dict) else (None, None)
        if source not in nodes or target not in nodes:
            raise ParamError(f"Edge {k + 1} joins unknown layers ({source!r} → {target!r})")
        handle = None
        if source == entry["id"]:
            handle = edge.get("sourceHandle")
            if handle not in dict(inputs):
                raise ParamError(f"Edge {k + 1} leaves the Input by an unknown port {handle!r}")
            used_inputs.add(handle)
        elif source == exit_["id"]:
            raise ParamError(f"Edge {k + 1} leaves the Output node")
        if target == exit_["id"]:
            port = edge.get("targetHandle")
            if port not in into_output:
                raise ParamError(f"Edge {k + 1} enters the Output by an unknown port {port!r}")
            into_output[port].append((source, handle))
        elif target == entry["id"]:
            raise ParamError(f"Edge {k + 1} enters the Input node")
        else:
            steps[target].sources.append((source, handle))
    for port, name in inputs:
        if port not in used_inputs:
            raise ParamError(f"Input '{name}' feeds no layer")
    for port, name in outputs:
        if len(into_output[port]) != 1:
            raise ParamError(f"Output '{name}' needs exactly one incoming edge, not {len(into_output[port])}")
    for step in steps.values():
        _check_sources(step)
    order = _ordered(steps, entry["id"])
    return Spec(order, entry["id"], inputs, [(name, into_output[port][0]) for port, name in outputs])


def _ports(node: dict[str, Any]) -> list[tuple[str, str]]:
    ports = node.get("ports")
    if not isinstance(ports, list) or not ports or not all(
            isinstance(p, dict) and isinstance(p.get("id"), str) and isinstance(p.get("name"), str) for p in ports):
        raise ParamError(f"The {node['type']} node needs ports, each with an id and a name")
    names = [p["name"] for p in ports]
    if len(set(names)) != len(names):
        raise ParamError(f"The {node['type']} node's port names must differ")
    return [(p["id"], p["name"]) for p in ports]


def _step(node: dict[str, Any]) -> Step:
    type_key, node_id = node.get("type"), node["id"]
    if type_key not in LAYER_TYPES and type_key not in MERGE_TYPES:
        raise ParamError(f"Layer '{node_id}' has an unknown type {type_key!r}; known: "
                         f"{', '.join([*LAYER_TYPES, *MERGE_TYPES])}")
    raw = node.get("params") or {}
    if not isinstance(raw, dict):
        raise ParamError(f"Layer '{node_id}' ({type_key}): params must be an object")
    declared = {p.name: p for p in declared_params(type_key)}
    params = {p.name: p.default for p in declared.values()}
    for name, value in raw.items():
        if name not in declared:
            known = ", ".join(declared) or "none"
            raise ParamError(f"Layer '{node_id}' ({type_key}) has no param '{name}' (its params: {known})")
        try:
            params[name] = declared[name].coerce(value)
        except ParamError as exc:
            raise ParamError(f"Layer '{node_id}' ({type_key}): {exc}") from None
    return Step(node_id, type_key, params)


def _check_sources(step: Step) -> None:
    count = len(step.sources)
    if not step.merge:
        if count != 1:
            raise ParamError(f"{step.name} has {count} inputs; a layer takes exactly one (join "
                             "branches with a merge such as Add or Concat)")
        return
    merge = MERGE_TYPES[step.type]
    if count < merge.fewest or (merge.most is not None and count > merge.most):
        wanted = (f"exactly {merge.most}" if merge.most == merge.fewest
                  else f"at least {merge.fewest}")
        raise ParamError(f"{step.name} joins {count} input{'s' if count != 1 else ''}; it needs {wanted}")


def _ordered(steps: dict[str, Step], entry: str) -> list[Step]:
    """Kahn's order, file order among equals (so weights are made in the order a file lists them)."""
    done, order = {entry}, []
    waiting = list(steps.values())
    while waiting:
        ready = [s for s in waiting if all(src in done for src, _ in s.sources)]
        if not ready:
            raise ParamError(f"The layers {', '.join(repr(s.id) for s in waiting)} form a loop or "
                             "hang off a loop")
        for s in ready:
            done.add(s.id)
        order.extend(ready)
        waiting = [s for s in waiting if s.id not in done]
    return order


# -- building the model ---------------------------------------------------------------------

def build_layer(step: Step) -> nn.Module:
    """The PyTorch layer of one step. Declared defaults are PyTorch's own where it has one,
    so a param a file leaves out means what it means in CodefyUI."""
    try:
        return LAYER_TYPES[step.type].build(**step.params)
    except (ValueError, TypeError, RuntimeError, AssertionError, ParamError) as exc:
        raise ParamError(f"{step.name}: {_first_line(exc)}") from None


def weight_counts(spec: Spec) -> dict[str, int]:
    """How many weights each layer holds, counted without allocating them (on the meta device)."""
    with torch.device("meta"):
        return {s.id: sum(p.numel() for p in build_layer(s).parameters())
                for s in spec.steps if not s.merge}


class LayerGraph(nn.Module):
    """A model that computes its layers in order, each from the values of its sources.

    ``layers`` holds the layers by their ids, so the weights' names (``layers.c1.weight``)
    are the same as in CodefyUI's saved models. ``seen_input_shapes`` is what the last call
    received, for the Layers editor.
    """

    def __init__(self, spec: Spec):
        super().__init__()
        self.layers = nn.ModuleDict()
        for step in spec.steps:
            if not step.merge:
                try:
                    self.layers[step.id] = build_layer(step)
                except KeyError:
                    raise ParamError(f"{step.name}: the id '{step.id}' is a reserved word; rename the layer") from None
        self.steps = [(s.id, s.type, s.params, s.sources) for s in spec.steps]
        self.input_id = spec.input_id
        self.input_ports = spec.inputs
        self.output_ports = spec.outputs
        self.seen_input_shapes: list[list[int]] | None = None

    def forward(self, *args: torch.Tensor) -> Any:
        if len(args) != len(self.input_ports):
            names = ", ".join(name for _, name in self.input_ports)
            raise ValueError(f"the model takes {len(self.input_ports)} input(s) ({names}), not {len(args)}")
        self.seen_input_shapes = [list(a.shape) for a in args]
        values = {(self.input_id, port): x for (port, _), x in zip(self.input_ports, args)}
        for node_id, type_key, params, sources in self.steps:
            inputs = [values[(src, handle)] for src, handle in sources]
            values[(node_id, None)] = self._compute(node_id, type_key, params, inputs)
        results = {name: values[source] for name, source in self.output_ports}
        return next(iter(results.values())) if len(results) == 1 else results

    def _compute(self, node_id: str, type_key: str, params: dict, inputs: list[torch.Tensor]) -> torch.Tensor:
        try:
            if type_key in MERGE_TYPES:
                return MERGE_TYPES[type_key].apply(inputs, params)
            return self.layers[node_id](inputs[0])
        except (RuntimeError, ValueError, IndexError, TypeError) as exc:
            raise ValueError(f"Layer '{node_id}' ({type_key}) {misfit(type_key, params, inputs) or _first_line(exc)}") from None


def misfit(type_key: str, params: dict[str, Any], inputs: list[torch.Tensor]) -> str | None:
    """Why these inputs do not fit this layer, in the student's words, where it can be said."""
    kind = LAYER_TYPES.get(type_key)
    if kind is None:
        shapes = " and ".join(_shape(t.shape) for t in inputs)
        return f"cannot join {shapes}"
    try:
        return kind.misfit(params, inputs[0].shape)
    except (KeyError, IndexError):
        return None


def build(spec: Spec) -> LayerGraph:
    return LayerGraph(spec)


# -- shapes, for the Layers editor ----------------------------------------------------------

def trace_shapes(spec: Spec, input_shapes: list[list[int]]) -> dict[str, list[int] | str]:
    """The shape after each layer for inputs of these shapes, or why that layer fails; layers
    after a failure are left out. Runs on the meta device: no numbers are computed."""
    with torch.device("meta"):
        try:
            model = LayerGraph(spec)
        except ParamError as exc:
            return {"": str(exc)}
        values = {(spec.input_id, port): torch.empty(shape, dtype=_input_dtype(spec, port))
                  for (port, _), shape in zip(spec.inputs, input_shapes)}
        found: dict[str, list[int] | str] = {}
        for step in spec.steps:
            if any(source not in values for source in step.sources):
                continue
            try:
                out = model._compute(step.id, step.type, step.params, [values[s] for s in step.sources])
            except ValueError as exc:
                found[step.id] = str(exc)
                continue
            values[(step.id, None)] = out
            found[step.id] = list(out.shape)
    return found


def _input_dtype(spec: Spec, port: str) -> torch.dtype:
    """Token ids for a model that starts with an Embedding, else float numbers."""
    first = next((s for s in spec.steps if (spec.input_id, port) in s.sources), None)
    return torch.long if first is not None and first.type == "Embedding" else torch.float32


def _shape(shape) -> str:
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
