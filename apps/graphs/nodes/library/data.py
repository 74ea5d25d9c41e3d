"""Nodes that make tensors from their params: TensorInput (Data) and TensorCreate."""
from __future__ import annotations

import torch

from ..base import NodeError, Param, ParamError, register
from ._helpers import (TENSOR_OUT, LibraryNode, numel, param_value, seed_value, shape_str,
                       sizes)

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64,
          "int32": torch.int32, "bool": torch.bool}


def _flatten(values, out: list[float]) -> list[float]:
    """A nested list of numbers as one flat list, row by row."""
    if isinstance(values, (list, tuple)):
        for item in values:
            _flatten(item, out)
        return out
    if isinstance(values, bool):
        out.append(float(values))
        return out
    try:
        out.append(float(values))
    except (TypeError, ValueError):
        raise NodeError(f"'values' must contain only numbers, but it contains {values!r}") from None
    return out


def _nested(flat: list[float], shape: list[int]) -> list:
    """A flat list of numbers laid out in ``shape``, as the script writes it."""
    if len(shape) == 1:
        return list(flat)
    step = len(flat) // shape[0]
    return [_nested(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def shape_param(params) -> tuple[int, ...] | None:
    """``largest_shape`` of a node that makes one tensor of its 'shape' param, in every mode
    (a float64 copy of typed values, int64 coin flips, a count: never more elements); None
    for a malformed shape, which the node's run then names."""
    try:
        return tuple(sizes(params, "shape"))
    except (ParamError, NodeError):
        return None


@register
class TensorInput(LibraryNode):
    type = "TensorInput"
    category = "Data"
    description = "Makes a tensor of the shape you choose: typed values, random, zeros, ones or 0, 1, 2, …"
    details = (
        "A tensor is a box of numbers arranged in rows and columns, and possibly more "
        "directions. 'shape' says how many numbers go each way: \"1,4,4\" gives a tensor of "
        "shape [1, 4, 4], which is one 4×4 grid holding 16 numbers. 'value_mode' fills it: "
        "explicit uses the numbers you type in 'values' (exactly as many as the shape holds), "
        "random draws numbers from the standard normal distribution (mostly between -2 and 2, "
        "around 0; whole-number dtypes get 0 to 9, bool gets coin flips), zeros and ones fill "
        "it with 0 or 1, and arange counts 0, 1, 2, … 'dtype' is the kind of number: float32 "
        "for fractions, int64 for whole numbers, bool for true/false. Random mode draws from "
        "'seed' (0 is a seed like any other), so it gives the same numbers on every run and "
        "the same as CodefyUI with that seed: change the seed for other numbers."
    )
    outputs = TENSOR_OUT
    params = (
        Param("shape", "string", "1,4,4", "Sizes separated by commas, e.g. 1,4,4"),
        Param("dtype", "select", "float32", "Kind of number stored", options=tuple(DTYPES)),
        Param("value_mode", "select", "random", "How the tensor is filled",
              options=("explicit", "random", "zeros", "ones", "arange")),
        Param("values", "grid", [[[0.0] * 4 for _ in range(4)]],
              "The numbers to use when value_mode is explicit"),
        Param("seed", "int", 0, "Random mode draws these numbers on every run (0 included)"),
    )

    @classmethod
    def to_python(cls, code, params):
        shape, dtype, mode = sizes(params, "shape"), f"torch.{params['dtype']}", params["value_mode"]
        size, size_tuple = ", ".join(map(str, shape)), repr(tuple(shape))
        if mode == "explicit":
            flat = _flatten(params.get("values") or [], [])
            if len(flat) != numel(shape):
                raise NodeError("values do not fill the shape")   # the engine's run says so
            return {"tensor": code.value(f"torch.tensor({code.literal(_nested(flat, shape))}, dtype={dtype})", "tensor")}
        if mode == "random":
            code.line(f"generator = torch.Generator().manual_seed({seed_value(params['seed'])})")
            draw = (f"torch.randint(0, 2, {size_tuple}, generator=generator).bool()" if params["dtype"] == "bool" else
                    f"torch.randn({size_tuple}, generator=generator, dtype={dtype})" if params["dtype"].startswith("float")
                    else f"torch.randint(0, 10, {size_tuple}, generator=generator, dtype={dtype})")
            return {"tensor": code.value(draw, "tensor")}
        if mode == "arange":
            return {"tensor": code.value(f"torch.arange({numel(shape)}).reshape({size}).to({dtype})", "tensor")}
        return {"tensor": code.value(f"torch.{mode}({size_tuple}, dtype={dtype})", "tensor")}

    @classmethod
    def largest_shape(cls, params, inputs):
        return shape_param(params)

    def run(self, ctx, params, **inputs):
        shape = sizes(params, "shape")
        count = numel(shape)
        dtype, mode = DTYPES[params["dtype"]], params["value_mode"]
        if mode == "explicit":
            values = params.get("values")
            flat = [] if values is None else _flatten(values, [])
            if not flat:
                raise NodeError("value_mode=explicit requires 'values' to be set")
            if len(flat) != count:
                raise NodeError(f"values has {len(flat)} elements but shape {shape_str(shape)} "
                                f"requires {count}")
            tensor = torch.tensor(flat, dtype=torch.float64).reshape(shape).to(dtype)
        elif mode == "random":
            gen = torch.Generator().manual_seed(seed_value(params["seed"]))  # CodefyUI's numbers
            if dtype == torch.bool:
                tensor = torch.randint(0, 2, shape, generator=gen).bool()
            elif dtype.is_floating_point:
                tensor = torch.randn(shape, generator=gen, dtype=dtype)
            else:
                tensor = torch.randint(0, 10, shape, generator=gen, dtype=dtype)
        elif mode == "zeros":
            tensor = torch.zeros(shape, dtype=dtype)
        elif mode == "ones":
            tensor = torch.ones(shape, dtype=dtype)
        else:  # arange
            tensor = torch.arange(count).reshape(shape).to(dtype)
        tensor = tensor.to(ctx.device)
        if ctx.gradients and tensor.is_floating_point():  # Capture gradients: its gradient is shown too
            tensor.requires_grad_(True)
        return {"tensor": tensor}


@register
class TensorCreate(LibraryNode):
    type = "TensorCreate"
    category = "Tensor Operations"
    description = "Makes a float tensor of a given shape filled with zeros, ones, noise, one value or a count."
    details = (
        "Use it to make a test input for a layer. 'shape' lists the sizes, e.g. \"1,3,224,224\" "
        "is one colour image (3 channels) of 224×224 pixels, 150,528 numbers in all. 'fill' "
        "chooses the numbers: zeros, ones, randn (bell-curve noise around 0), rand (between 0 "
        "and 1), full (every number equals 'value') or arange (0, 1, 2, … in reading order). "
        "The tensor is always float32. Tick 'requires_grad' to ask PyTorch to track "
        "gradients for it, so a later backward pass tells you how each number affects the loss."
    )
    outputs = TENSOR_OUT
    params = (
        Param("shape", "string", "1,3,224,224", "Sizes separated by commas"),
        Param("fill", "select", "zeros", "What to fill the tensor with",
              options=("zeros", "ones", "randn", "rand", "full", "arange")),
        Param("value", "float", 0.0, "The number used when fill is full"),
        Param("requires_grad", "bool", False, "Track gradients for this tensor"),
    )

    @classmethod
    def to_python(cls, code, params):
        size, fill = ", ".join(map(str, sizes(params, "shape"))), params["fill"]
        size_tuple = repr(tuple(sizes(params, "shape")))
        if fill in ("randn", "rand"):
            made = f"torch.{fill}({size_tuple}, generator={code.generator()})"
        elif fill == "arange":
            made = f"torch.arange({numel(sizes(params, 'shape'))}, dtype=torch.float32).reshape({size})"
        elif fill == "full":
            made = f"torch.full({size_tuple}, {code.literal(float(params['value']))})"
        else:
            made = f"torch.{fill}({size_tuple})"
        tensor = code.value(made, "tensor")
        if params["requires_grad"]:
            code.line(f"{tensor}.requires_grad_(True)")
        return {"tensor": tensor}
    uses_rng = True  # randn and rand draw from the run's generator

    @classmethod
    def largest_shape(cls, params, inputs):
        return shape_param(params)

    @classmethod
    def draws_random(cls, params):
        return param_value(cls, params, "fill") in ("randn", "rand")

    def run(self, ctx, params, **inputs):
        shape = sizes(params, "shape")
        fill = params["fill"]
        if fill in ("randn", "rand"):
            draw = torch.randn if fill == "randn" else torch.rand
            tensor = draw(shape, generator=ctx.generator()).to(ctx.device)
        elif fill == "arange":
            tensor = torch.arange(numel(shape), dtype=torch.float32, device=ctx.device).reshape(shape)
        elif fill == "full":
            tensor = torch.full(shape, float(params["value"]), device=ctx.device)
        else:
            make = torch.zeros if fill == "zeros" else torch.ones
            tensor = make(shape, device=ctx.device)
        if params["requires_grad"]:
            tensor.requires_grad_(True)
        return {"tensor": tensor}
