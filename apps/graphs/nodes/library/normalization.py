"""Normalization layers."""
from __future__ import annotations

import torch
from torch import nn

from ..base import NodeError, Param, register
from ._helpers import (TENSOR_IN, TENSOR_OUT, LibraryNode, build_layer, numel, shape_str, sizes,
                       step, to_layer_dtype)


@register
class LayerNorm(LibraryNode):
    type = "LayerNorm"
    category = "Normalization"
    description = "Normalises each sample's last dimension(s) to mean 0 and spread 1, then rescales."
    details = (
        "Unlike BatchNorm, LayerNorm looks at one sample at a time: for each token or row it "
        "subtracts the mean of the last dimension(s) and divides by their standard deviation, "
        "then applies a learned scale (gamma) and shift (beta). 'normalized_shape' is the size "
        "of those last dimensions, e.g. \"512\" for vectors of 512 numbers, or \"4,4\" for the "
        "last two. The shape is unchanged: [2, 10, 512] → [2, 10, 512]. 'eps' is a tiny "
        "number added to the variance so we never divide by zero. Transformers use it in "
        "every block."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (
        Param("normalized_shape", "string", "512", "Size(s) of the last dimension(s), e.g. 512"),
        Param("eps", "float", 1e-5, "Small number added to the variance", min=0.0),
    )
    stateful = True
    records_steps = True

    def run(self, ctx, params, tensor):
        shape = sizes(params, "normalized_shape")
        tail = list(tensor.shape[tensor.dim() - len(shape):]) if tensor.dim() >= len(shape) else None
        if tail != shape:
            hint = ",".join(str(s) for s in tensor.shape[-len(shape):]) or "1"
            raise NodeError(f"Size mismatch: LayerNorm normalises the last {len(shape)} "
                            f"dimension(s) with sizes {shape_str(shape)}, but the input has shape "
                            f"{shape_str(tensor.shape)}; set normalized_shape to {hint}")
        eps = params["eps"]
        layer = build_layer(ctx, 2 * numel(shape), "LayerNorm parameters",
                            lambda: nn.LayerNorm(shape, eps=eps))
        x = to_layer_dtype(tensor, layer)
        out = layer(x)
        if ctx.verbose:
            dims = tuple(range(-len(shape), 0))
            mean = x.mean(dim=dims, keepdim=True)
            var = x.var(dim=dims, keepdim=True, unbiased=False)
            step(ctx, "input", f"The input, shape {shape_str(x.shape)}.", input=x)
            step(ctx, "compute_mean", "The mean $\\mu$ over the last dimension(s), one per "
                 "sample: $$\\mu = \\frac{1}{n} \\sum_i x_i$$", mean=mean)
            step(ctx, "compute_var", "The variance $\\sigma^2$: the mean squared distance "
                 "from $\\mu$ (divided by $n$, not $n - 1$): $$\\sigma^2 = \\frac{1}{n} \\sum_i (x_i - \\mu)^2$$", var=var)
            step(ctx, "normalize", "Subtract the mean and divide by the spread: "
                 "$$\\hat x = \\frac{x - \\mu}{\\sqrt{\\sigma^2 + \\epsilon}}$$ Each sample now has "
                 "mean 0 and variance 1; the small $\\epsilon$ avoids dividing by zero.",
                 normalized=(x - mean) / torch.sqrt(var + layer.eps))
            step(ctx, "scale_shift", "Scale and shift with the learned $\\gamma$ and "
                 "$\\beta$: $$y = \\gamma \\hat x + \\beta$$", gamma=layer.weight, beta=layer.bias, output=out)
        return {"tensor": out}
