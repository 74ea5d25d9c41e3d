"""The element limit (CODEFYUI_MAX_TENSOR_ELEMENTS), held for every node in one place.

While a node runs, ``element_limit`` sees every tensor operation it makes (its intermediates
and its layers' weights too, a node written later as much as the library's) and works out
each operation's result on the meta device first: shapes and dtypes only, no memory. An
operation whose result would hold more elements than the limit is refused before anything
is allocated, naming the node, the shape and the limit. Views allocate nothing and pass.

Shapes depend only on the inputs' shapes, dtypes and the operation's other arguments, so
each answer is remembered: a training loop pays for the meta run once per distinct op.
An operation whose result depends on the data (``nonzero``, ``masked_select``, ``item``)
cannot run on meta; it runs for real and its result is checked right after, so the limit
still holds for it.

A backward pass a node runs (BackwardOnce, a training step) is guarded like its other ops.
The one Capture gradients runs after the forward pass belongs to no node and is not: each
gradient has the shape of a tensor the forward pass made, or of a view of one; the run's
memory cap bounds the rest (a broadcast view's gradient made whole, a kernel's scratch).

A node that can tell the largest tensor it will make before it runs (``Node.largest_shape``:
Linear, Conv2d, the pools, Activation, Softmax, Flatten) has that one shape checked instead:
the guard's ~10-40 µs an op was ~0.5 ms of a small MLP's run, more than its activations' own
arithmetic.
"""
from __future__ import annotations

import math
import re
import threading
from contextlib import contextmanager
from typing import Any, Iterator

import torch
from cachetools import LRUCache
from torch.utils import _python_dispatch
from torch.utils._python_dispatch import TorchDispatchMode

from apps.graphs.nodes.base import NodeError

META = torch.device("meta")
_UNKNOWN = object()    # the op cannot run on meta: check its real result
# (op, argument shapes) -> its largest result's shape, for the last 8192 asked in this process
_memo: LRUCache[tuple, Any] = LRUCache(maxsize=8192)
_memo_lock = threading.Lock()   # a run's node chains share it, and an LRUCache's reads reorder it


class TooManyElements(NodeError):
    """A node's operation would make a tensor larger than the element limit."""

    def __init__(self, node: str, shape: tuple[int, ...], limit: int):
        super().__init__(f"{node} would need a tensor of shape {list(shape)} ({math.prod(shape):,} "
                         f"elements), more than the {limit:,} this server allows "
                         "(CODEFYUI_MAX_TENSOR_ELEMENTS). Use smaller sizes.")


@contextmanager
def element_limit(node: str, limit: int, largest: tuple[int, ...] | None = None) -> Iterator[None]:
    """Refuse, in this thread, every tensor over ``limit`` elements while the block runs.
    ``largest``: the shape of the largest tensor the block will make, told beforehand
    (``Node.largest_shape``): that one shape is checked now, and no op is guarded."""
    if largest is not None:
        if math.prod(largest) > limit:
            raise TooManyElements(node, largest, limit)
        yield
        return
    with _ElementLimit(node, limit):
        yield


@contextmanager
def suspended() -> Iterator[None]:
    """Run the block without this thread's guard. For a node that repeats a step whose every
    op the guard has passed at a size at least as large (a training loop's later batches:
    each op's result grows with the batch, so a batch no larger than a checked one is within
    the limit too). The guard costs ~10 µs an op, which would double a small model's step."""
    if not isinstance(_python_dispatch._get_current_dispatch_mode(), _ElementLimit):
        yield
        return
    with _python_dispatch._pop_mode_temporarily():
        yield


class _ElementLimit(TorchDispatchMode):
    def __init__(self, node: str, limit: int):
        super().__init__()
        self.node, self.limit = node, limit

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Nodes never run under torch.compile, and the wrapper that would keep it out of
        # __torch_dispatch__ costs more than the whole check (bench/size_guard.py).
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.is_view:
            return func(*args, **kwargs)
        shape = _largest_result(func, args, kwargs)
        if shape is _UNKNOWN:
            out = func(*args, **kwargs)
            self._check(_largest(out))
            return out
        self._check(shape)
        return func(*args, **kwargs)

    def _check(self, shape: tuple[int, ...]) -> None:
        if math.prod(shape) > self.limit:
            raise TooManyElements(self.node, shape, self.limit)


def warm_up() -> None:
    """Pay once, at start-up, what the first meta run costs: torch's Python meta kernels load
    torch._dynamo on first use (~70 MB, seconds; any optimiser step loads it too). Loaded
    before the heap is frozen, it is not walked by every garbage collection either."""
    with element_limit("warm-up", 1):
        torch.ones(1) + torch.ones(1)


def _largest_result(func, args: tuple, kwargs: dict[str, Any]) -> Any:
    """The shape of the op's largest result, from a meta run (remembered), or _UNKNOWN."""
    key = (func, _describe(args), *[(k, _describe(v)) for k, v in kwargs.items()])
    try:
        with _memo_lock:
            known = _memo.get(key)
    except TypeError:  # an argument that cannot be a key: work it out without remembering
        key = known = None
    if known is not None:
        return known
    try:
        meta_kwargs = {k: _to_meta(v) for k, v in kwargs.items()}
        if "device" in meta_kwargs:
            meta_kwargs["device"] = META
        for name in ("generator", "pin_memory"):  # neither decides a shape; meta takes neither
            if name in meta_kwargs:
                meta_kwargs[name] = None
        shape = _largest(func(*_to_meta(args), **meta_kwargs))
    except Exception as exc:  # data-dependent, no meta kernel, or an error the real op reports better
        shape = _overflowed(exc)
    if key is not None:
        with _memo_lock:
            _memo[key] = shape
    return shape


def _overflowed(exc: Exception) -> Any:
    """The shape a meta run refused because its size overflows 64 bits (a ConvTranspose2d of
    stride 2**31 - 1): far past any limit, and the real op would fail with a message no
    student can read. _UNKNOWN for any other error."""
    sizes = _OVERFLOWED.search(str(exc))
    return tuple(int(n) for n in sizes[1].split(",")) if sizes else _UNKNOWN


_OVERFLOWED = re.compile(r"size calculation overflowed with sizes=\[([\d, ]+)\]")


def _describe(x: Any) -> Any:
    """What of an argument can decide a result's shape: a tensor's shape and dtype,
    everything else as it is."""
    if isinstance(x, torch.Tensor):
        return x.shape, x.dtype
    if isinstance(x, (list, tuple)):
        return tuple([(v.shape, v.dtype) if isinstance(v, torch.Tensor) else _describe(v) for v in x])
    if isinstance(x, torch.Generator):
        return torch.Generator
    return x


def _to_meta(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=META)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_meta(v) for v in x)
    return x


def _largest(out: Any) -> tuple[int, ...]:
    """The shape with the most elements among an op's tensor results (() when it made none)."""
    if isinstance(out, torch.Tensor):
        return tuple(out.shape)
    if isinstance(out, (list, tuple)):
        return max((_largest(item) for item in out), key=math.prod, default=())
    return ()
