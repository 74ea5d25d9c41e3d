"""Shared pieces of the node library: port shorthands, shape parsing, layer building,
step recording and the friendly errors students see.

Every library node subclasses ``LibraryNode``. Its ``run`` is wrapped once, when the class is
defined, so that (1) a list or number arriving on a TENSOR input becomes a tensor on the run
device, and (2) an error torch raises that the node did not foresee still reaches the student
as a ``NodeError`` naming the node, instead of a traceback.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Iterable

import torch

from ..base import Node, NodeError, ParamError, Port, RunContext, parse_int_list
from ._images import PngImage
from ._images import as_tensor as image_tensor

# -- port shorthands ---------------------------------------------------------------------

TENSOR_IN = (Port("tensor"),)
TENSOR_OUT = (Port("tensor"),)
PAIR_IN = (Port("tensor_a"), Port("tensor_b"))


# -- the base class of every library node -------------------------------------------------

class LibraryNode(Node):
    """A node of the built-in catalogue (see the module docstring for what it adds)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        run = cls.__dict__.get("run")
        if run is not None and not getattr(run, "_guarded", False):
            cls.run = _guard(run)


def _guard(run: Callable) -> Callable:
    @functools.wraps(run)
    def guarded(self, ctx, params, **inputs):
        node = type(self)  # a subclass may inherit this run (the pooling nodes do)
        for port in node.inputs:
            if port.type == "TENSOR" and inputs.get(port.name) is not None:
                inputs[port.name] = to_tensor(inputs[port.name], port.name, node.type, ctx.device)
        try:
            return run(self, ctx, params, **inputs)
        except NodeError:
            raise
        except ParamError as exc:
            raise NodeError(f"{node.type}: {exc}") from exc
        except (RuntimeError, ValueError, IndexError, TypeError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise NodeError(f"{node.type} failed: {first}") from exc

    guarded._guarded = True
    return guarded


def param_value(node: type[Node], params: dict[str, Any], name: str) -> Any:
    """One param read leniently (raw or coerced; a bad value counts as the default), for
    class-level hooks such as ``output_ports`` and ``draws_random`` that see raw params."""
    param = next(p for p in node.params if p.name == name)
    try:
        return param.coerce(params.get(name))
    except ParamError:
        return param.default


def to_tensor(value: Any, port: str, node_type: str, device: Any) -> torch.Tensor:
    """A value wired into a TENSOR input (lists and numbers allowed) as a tensor."""
    if isinstance(value, torch.Tensor):
        return value
    if is_picture(value):
        return image_tensor(value).to(device)
    if isinstance(value, (bool, int, float, list, tuple)) or hasattr(value, "__array__"):
        try:
            if hasattr(value, "__array__") and not isinstance(value, (list, tuple)):
                import numpy  # only needed for array-like inputs such as images

                value = numpy.asarray(value)
            return torch.as_tensor(value, device=device)
        except (TypeError, ValueError, RuntimeError):
            pass
    raise NodeError(f"Input '{port}' of {node_type} needs a tensor, but received a value of "
                    f"type '{type(value).__name__}'")


def is_picture(value: Any) -> bool:
    """A PngImage or a PIL image (PIL is imported only where one can be)."""
    return isinstance(value, PngImage) or type(value).__module__.startswith("PIL.")


# -- shapes and dims -----------------------------------------------------------------------

def shape_str(shape: Iterable[int]) -> str:
    """torch.Size([1, 4, 4]) -> '[1, 4, 4]', the way every message writes a shape."""
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def numel(shape: Iterable[int]) -> int:
    return math.prod(int(s) for s in shape)


def sizes(params: dict[str, Any], name: str) -> list[int]:
    """A shape param such as '1,4,4' whose sizes must all be 1 or more."""
    shape = parse_int_list(params[name], name)
    if any(s < 1 for s in shape):
        raise NodeError(f"'{name}' sizes must be 1 or more, but {params[name]!r} gives "
                        f"{shape_str(shape)}")
    return shape


def check_dim(x: torch.Tensor, dim: int, name: str = "dim", extra: int = 0) -> int:
    """Refuse a dim outside the tensor's range; ``extra=1`` for ops that add a dimension."""
    n = max(x.dim() + extra, 1)
    if not -n <= dim < n:
        raise NodeError(f"'{name}' = {dim} is out of range for a {x.dim()}-D tensor of shape "
                        f"{shape_str(x.shape)}; use a value from {-n} to {n - 1}")
    return dim


def need_rank(x: torch.Tensor, ranks: tuple[int, ...], node: str, layout: str) -> None:
    if x.dim() not in ranks:
        wanted = " or ".join(f"{r}-D" for r in ranks)
        raise NodeError(f"{node} expects a {wanted} tensor {layout}, but got shape "
                        f"{shape_str(x.shape)} ({x.dim()}-D)")


def check_channels(x: torch.Tensor, dim: int, expected: int, param: str, node: str = "") -> None:
    """Refuse an input whose size at ``dim`` is not the ``param`` channels the layer was set to."""
    got = x.shape[dim]
    if got != expected:
        who = f"{node} " if node else ""
        raise NodeError(f"Channel mismatch: {who}expected {expected} channels, got {got} (input shape "
                        f"{shape_str(x.shape)}); set {param} to {got}")


def as_float(x: torch.Tensor) -> torch.Tensor:
    """Whole-number and true/false tensors become float32 for ops that need fractions."""
    return x if x.is_floating_point() else x.float()


def broadcast_shape(a: torch.Tensor, b: torch.Tensor, verb: str) -> torch.Size:
    try:
        return torch.broadcast_shapes(a.shape, b.shape)
    except RuntimeError:
        raise NodeError(f"Shape mismatch: cannot {verb} {shape_str(a.shape)} and "
                        f"{shape_str(b.shape)}. Compared from the right, each pair of sizes "
                        "must be equal or one of them must be 1 (e.g. [2, 3] and [3] work)"
                        ) from None


def shape_of(value: Any) -> tuple[int, ...] | None:
    """A tensor's shape (None for anything else), for ``Node.largest_shape``."""
    return tuple(value.shape) if isinstance(value, torch.Tensor) else None


# -- layers ----------------------------------------------------------------------------------

def build_layer(ctx: RunContext, elements: int, what: str, build: Callable[[], Any],
                seed: int | None = None) -> Any:
    """Check the weight count, then get this node's layer from the engine.

    The weights are initialised from ``seed`` when given (a node's own seed param), else from
    the run's seed for this node, so a seeded run starts from the same weights every time.
    ``fork_rng`` keeps torch's global random state untouched. The count bounds every tensor
    the layer's construction makes (its parameters and buffers), so it runs without the
    element limit's per-op guard: a small model's layers are half its forward pass's ops.
    """
    ctx.check_size(int(elements), what)
    seed = ctx.seed if seed is None else seed
    with ctx.unguarded():
        return ctx.module(lambda: seeded(seed, build))


def seeded(seed: int | None, build: Callable[[], Any]) -> Any:
    """``build()`` with torch's random numbers drawn from ``seed`` (unseeded when None),
    leaving torch's global random state as it was."""
    if seed is None:
        return build()
    with torch.random.fork_rng(devices=[]):
        manual_seed(seed_value(seed))
        return build()


def manual_seed(seed: int) -> None:
    """``torch.manual_seed`` at a twentieth of its cost: that one also queues a seeding for
    every accelerator backend torch knows (CUDA, XPU, MTIA) and formats the caller's stack for
    each, about 0.1 ms a call, paid by every node of a seeded run. The devices a run may use
    (TrainingLoop's cuda and mps) are seeded here only where they exist."""
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    if torch.backends.mps.is_available():
        torch.mps.manual_seed(seed)


def normal_init(seed: int, layers: Iterable[Any], scale: float | None = None) -> None:
    """CodefyUI's initialisation for its lesson layers, so a worksheet shows the same numbers:
    one generator seeded with ``seed`` draws each layer's weights in turn from N(0, 1), times
    ``scale`` (by default 1/√fan-in); biases start at zero."""
    generator = torch.Generator().manual_seed(seed_value(seed))
    with torch.no_grad():
        for layer in layers:
            weight = layer.weight
            factor = scale if scale is not None else 1 / math.sqrt(max(1, weight.shape[1]))
            weight.copy_(torch.randn(weight.shape, generator=generator) * factor)
            if layer.bias is not None:
                layer.bias.zero_()


def seed_value(seed: int) -> int:
    """A seed torch accepts: int64 seeds unchanged, larger ones folded into range."""
    seed = int(seed)
    return seed if -2**63 <= seed < 2**63 else seed % 2**63


def random_state(seed: int) -> int:
    """A seed scikit-learn takes (0 … 2**32 - 1); other whole numbers are folded into range."""
    return int(seed) % 2**32


def to_layer_dtype(x: torch.Tensor, module: torch.nn.Module) -> torch.Tensor:
    """Match the input's dtype to the layer's weights (an int64 input becomes float32)."""
    weight = next(iter(module.parameters()), None)
    dtype = weight.dtype if weight is not None else torch.float32
    return x if x.dtype == dtype else x.to(dtype)


# -- tables and labels for classical learning -------------------------------------------------

def features(x: torch.Tensor, port: str, node: str) -> torch.Tensor:
    """A feature table [rows, features]; a 1-D tensor is one feature per row."""
    if x.dim() == 1:
        x = x.unsqueeze(1)
    if x.dim() != 2:
        raise NodeError(f"{node} expects '{port}' as a 2-D table [rows, features], but got shape "
                        f"{shape_str(x.shape)}")
    return as_float(x)


def training_data(node: str, x_train: torch.Tensor, x_query: torch.Tensor,
                  n_labels: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The training and query tables, checked against each other (and the label count)."""
    x_train, x_query = features(x_train, "x_train", node), features(x_query, "x_query", node)
    if x_train.shape[0] == 0:
        raise NodeError(f"{node} needs at least one training row, but x_train is empty")
    if x_train.shape[1] != x_query.shape[1]:
        raise NodeError(f"{node}: x_query has {x_query.shape[1]} features per row but x_train "
                        f"has {x_train.shape[1]}; both need the same columns")
    if n_labels is not None and n_labels != x_train.shape[0]:
        raise NodeError(f"{node}: x_train has {x_train.shape[0]} rows but y_train has "
                        f"{n_labels} labels; give one label per row")
    return x_train, x_query


def label_items(value: Any, port: str, node_type: str) -> list:
    """Labels wired into a LIST port (a list, or a 1-D tensor) as they came, one a row: a
    tensor's values as numbers."""
    if isinstance(value, torch.Tensor):
        if value.dim() > 1:
            raise NodeError(f"Input '{port}' of {node_type} needs one label per row, but got a "
                            f"tensor of shape {shape_str(value.shape)}")
        return value.reshape(-1).tolist()
    if not isinstance(value, (list, tuple)):
        raise NodeError(f"Input '{port}' of {node_type} needs a list of labels, but received a "
                        f"value of type '{type(value).__name__}'")
    return list(value)


def class_labels(value: Any, port: str, node_type: str) -> list[str]:
    """Class labels (see ``label_items``) as the strings predictions are written in: 1.0 and 1
    both read "1"."""
    return [_label_text(v) for v in label_items(value, port, node_type)]


def _label_text(value: Any) -> str:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


# -- Verbose internals ---------------------------------------------------------------------

def step(ctx: RunContext, name: str, description: str, scalars: dict | None = None,
         **tensors: torch.Tensor) -> None:
    """Record one row of the ``__steps__`` trace (with Verbose internals on only); tensors
    are detached from autograd."""
    if not ctx.verbose:
        return
    ctx.step(name, description, tensors={k: v.detach() for k, v in tensors.items()},
             scalars=scalars or {})
