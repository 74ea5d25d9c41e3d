"""Data Flow: Map (a preset run on every item of a list), Reduce (a list to one value) and
Switch (one of several inputs, picked by a number)."""
from __future__ import annotations

import contextlib
from typing import Any

import torch

from ..base import NodeError, Param, Port, register, resolve
from ._helpers import LibraryNode, check_dim, shape_str

CATEGORY = "Data Flow"
MAX_ITEMS = 1000  # Map runs a whole preset per item; Reduce's list is already in memory


def items_list(value: Any, node: str) -> list[Any]:
    if isinstance(value, torch.Tensor) and value.dim() > 0:
        return list(value.unbind(0))  # a tensor counts as the list of its rows
    if not isinstance(value, (list, tuple)):
        raise NodeError(f"{node}: 'items' needs a list, but received a value of type "
                        f"'{type(value).__name__}'")
    return list(value)


# -- Reduce ------------------------------------------------------------------------------------

REDUCTIONS = ("sum", "mean", "min", "max", "concat", "stack", "first", "last")


@register
class Reduce(LibraryNode):
    type = "Reduce"
    category = CATEGORY
    description = "Combines a list of tensors or numbers into one: sum, mean, min, max, concat, stack, first or last."
    details = (
        "Takes a list (for example Map's results) and gives one value. sum, mean, min and max "
        "work element by element across the items, which must all have the same shape: the "
        "mean of three [2, 4] tensors is one [2, 4] tensor, and of the numbers 1, 2, 6 it is "
        "3. concat joins the items along 'dim' (two [2, 4] with dim 0 give [4, 4]); stack puts "
        "them on a new axis at 'dim' (two [2, 4] give [2, 2, 4]). first and last pick one item "
        "and accept anything. 'count' is how many items there were."
    )
    inputs = (Port("items", "LIST"),)
    outputs = (Port("result", "ANY"), Port("count", "SCALAR"))
    params = (
        Param("operation", "select", "mean", "How the items are combined", options=REDUCTIONS),
        Param("dim", "int", 0, "The axis concat joins along, or where stack adds its new axis"),
    )

    def run(self, ctx, params, items):
        values = items_list(items, "Reduce")
        op = params["operation"]
        if not values:
            raise NodeError(f"Reduce received an empty list; '{op}' needs at least one item")
        count = float(len(values))
        if op in ("first", "last"):
            return {"result": values[0] if op == "first" else values[-1], "count": count}
        tensors = []
        for i, item in enumerate(values):
            if isinstance(item, torch.Tensor):
                tensors.append(item)
            elif isinstance(item, (int, float)) and not isinstance(item, bool):
                tensors.append(torch.tensor(float(item), device=ctx.device))
            else:
                raise NodeError(f"Reduce '{op}' needs numbers or tensors, but item {i} is a "
                                f"'{type(item).__name__}'; 'first' and 'last' accept anything")
        shapes = {tuple(t.shape) for t in tensors}
        if op != "concat" and len(shapes) > 1:
            raise NodeError(f"Reduce '{op}' needs every item to have the same shape, but got "
                            f"{', '.join(shape_str(s) for s in sorted(shapes))}")
        if op == "concat":
            if tensors[0].dim() == 0:
                raise NodeError("Reduce 'concat' joins tensors along an axis, but the items are "
                                "single numbers; use 'stack' to make a 1-D tensor of them")
            check_dim(tensors[0], params["dim"])
            return {"result": torch.cat(tensors, dim=params["dim"]), "count": count}
        if op == "stack":
            check_dim(tensors[0], params["dim"], extra=1)
            return {"result": torch.stack(tensors, dim=params["dim"]), "count": count}
        stacked = torch.stack(tensors)
        if op in ("sum", "mean"):
            stacked = stacked if stacked.is_floating_point() or op == "sum" else stacked.float()
            result = stacked.sum(dim=0) if op == "sum" else stacked.mean(dim=0)
        else:
            result = stacked.amin(dim=0) if op == "min" else stacked.amax(dim=0)
        return {"result": result, "count": count}


# -- Switch ------------------------------------------------------------------------------------

@register
class Switch(LibraryNode):
    type = "Switch"
    category = CATEGORY
    description = "Passes on one of up to four inputs; 'selector' says which (0 to 3)."
    details = (
        "A switch for data: 'selector' is a number, and the value wired into input_<selector> "
        "goes out of 'output' (selector 2 passes input_2 on). Every wired input is computed; "
        "the switch only chooses which one continues. The selector must be a whole number "
        "from 0 to 3 whose input is wired; otherwise the node stops with a message."
    )
    inputs = (Port("selector", "SCALAR"), Port("input_0", "ANY"), Port("input_1", "ANY", optional=True),
              Port("input_2", "ANY", optional=True), Port("input_3", "ANY", optional=True))
    outputs = (Port("output", "ANY"),)

    def run(self, ctx, params, selector, **options):
        value = selector
        if isinstance(value, torch.Tensor):
            if value.numel() != 1:
                raise NodeError(f"Switch: 'selector' must be one number, but got a tensor of shape "
                                f"{shape_str(value.shape)}")
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, (int, float)) or float(value) != int(value):
            raise NodeError(f"Switch: 'selector' must be a whole number from 0 to 3, not {value!r}")
        index = int(value)
        if not 0 <= index <= 3:
            raise NodeError(f"Switch: selector = {index} is out of range; use 0 to 3 (input_0 to input_3)")
        chosen = options.get(f"input_{index}")
        if chosen is None:
            raise NodeError(f"Switch: selector = {index} picks input_{index}, but nothing is wired "
                            f"into it; wire input_{index} or choose a wired input")
        return {"output": chosen}


# -- Map ---------------------------------------------------------------------------------------

class _InnerContext:
    """What a preset's node sees inside Map: the Map node's context, except that its layers
    are fresh for every item (never the run's kept weights), and it records no steps, captures
    or progress of its own."""

    verbose = False
    gradients = False
    recording = False

    def __init__(self, outer) -> None:
        self._outer = outer

    def __getattr__(self, name):
        return getattr(self._outer, name)

    def module(self, build):
        return build().to(self._outer.device)

    def step(self, *args, **kwargs) -> None:
        pass

    def capture(self, port, value) -> None:
        pass

    def progress(self, **data) -> None:
        pass

    def unguarded(self):
        return contextlib.nullcontext()


def _preset_plan(name: str):
    """The preset's nodes in running order, with the node classes and each node's incoming edges."""
    from ...presets import builtin  # presets import the node library: only at run time

    presets = builtin()
    if not name.strip():
        raise NodeError("Map needs a preset: set 'subgraph' to the name of one of the product's "
                        f"presets ({', '.join(sorted(presets))})")
    preset = presets.get(name.strip())
    if preset is None:
        raise NodeError(f"Map: there is no preset named {name!r}; use one of "
                        f"{', '.join(sorted(presets))}")
    if not preset.inputs or not preset.outputs:
        raise NodeError(f"Map: the preset {name!r} has no exposed input or output to map with")
    classes, incoming = {}, {n["id"]: [] for n in preset.nodes}
    for n in preset.nodes:
        cls = resolve(n["type"])
        if cls is None or cls.subgraph or cls.script or cls.reports_training:
            raise NodeError(f"Map cannot run the preset {name!r}: its node {n['id']!r} "
                            f"({n['type']}) cannot run once per item")
        classes[n["id"]] = cls
    for e in preset.edges:
        if e["target"] in incoming and e["source"] in incoming:
            incoming[e["target"]].append(e)
    order, done = [], set()
    while len(order) < len(classes):  # Kahn's order; presets are tiny
        ready = [i for i in classes if i not in done and all(e["source"] in done for e in incoming[i])]
        if not ready:
            raise NodeError(f"Map cannot run the preset {name!r}: its edges form a loop")
        order.extend(ready)
        done.update(ready)
    return preset, order, classes, incoming


@register
class Map(LibraryNode):
    type = "Map"
    category = CATEGORY
    description = "Runs a preset on every item of a list and collects the results."
    details = (
        "For each item of 'items', the preset named in 'subgraph' (one of the product's presets, "
        "such as 'Simple CNN Classifier') runs once: the item goes into the preset's first "
        "exposed input and what comes out of its first exposed output is added to 'results', "
        "in order; 'count' is how many items ran. The preset's nodes run with their saved "
        "params and fresh layers for every item (seeded from the run's seed, so every item "
        "meets the same weights), and nothing inside is recorded: the Inspector shows Map's "
        "input list and result list. A tensor wired into 'items' counts as the list of its "
        f"rows. At most {MAX_ITEMS} items; Stop ends it between two items."
    )
    inputs = (Port("items", "LIST"),)
    outputs = (Port("results", "LIST"), Port("count", "SCALAR"))
    params = (Param("subgraph", "string", "", "The name of the preset run on every item"),)
    cacheable = False  # the preset's layers are built anew each run
    reports_progress = True

    def run(self, ctx, params, items):
        values = items_list(items, "Map")
        if len(values) > MAX_ITEMS:
            raise NodeError(f"Map received {len(values)} items; it runs at most {MAX_ITEMS}, so "
                            "split the list or use a batch")
        preset, order, classes, incoming = _preset_plan(params["subgraph"])
        entry, exit_ = preset.inputs[0], preset.outputs[0]
        node_params = {}
        for n in preset.nodes:
            coerced, problems = classes[n["id"]].coerce_params(n["params"])
            if problems:
                raise NodeError(f"Map: the preset's node {n['id']!r}: {problems[0]}")
            node_params[n["id"]] = coerced
        inner = _InnerContext(ctx)
        results = []
        for i, item in enumerate(values):
            if ctx.cancelled():
                raise NodeError(f"Map stopped after {i} of {len(values)} items")
            outputs: dict[str, dict[str, Any]] = {}
            for node_id in order:
                given = {e["targetHandle"]: outputs[e["source"]].get(e["sourceHandle"])
                         for e in incoming[node_id]}
                if node_id == entry["internal_node"]:
                    given[entry["internal_port"]] = item
                given = {k: v for k, v in given.items() if v is not None}
                try:
                    outputs[node_id] = classes[node_id]().run(inner, node_params[node_id], **given)
                except TypeError as exc:
                    raise NodeError(f"Map: item {i}: the preset's node {node_id!r} is missing an "
                                    f"input ({exc})") from None
                except NodeError as exc:
                    raise NodeError(f"Map: item {i}: {exc}") from None
            result = outputs.get(exit_["internal_node"], {}).get(exit_["internal_port"])
            if result is None:
                raise NodeError(f"Map: the preset gave no output for item {i}")
            results.append(result)
            ctx.progress(item=i + 1, items=len(values))
        return {"results": results, "count": float(len(results))}
