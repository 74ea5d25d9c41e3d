"""Normalization layers."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..base import NodeError, Param, Port, register
from ._helpers import (TENSOR_IN, TENSOR_OUT, LibraryNode, build_layer, check_channels, need_rank,
                       numel, shape_str, sizes, step, to_layer_dtype)


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

    @classmethod
    def to_python(cls, code, params, tensor):   # its weights start at 1 and 0: no random numbers
        layer = code.value(f"nn.{cls.type}({sizes(params, 'normalized_shape')!r}, eps={params['eps']!r})", "norm_layer")
        return {"tensor": code.value(f"{layer}({tensor})", "normalised")}
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


@register
class BatchNorm1d(LibraryNode):
    type = "BatchNorm1d"
    category = "Normalization"
    description = "Normalises each feature to mean 0 and spread 1 over the batch, then rescales it."
    details = (
        "BatchNorm1d is BatchNorm2d for tables and sequences, typically right after a Linear "
        "layer. For each of the 'num_features' features (the second dimension) it takes that "
        "feature's numbers across the whole batch (and along the sequence, for [N, C, L]), "
        "subtracts their mean and divides by their standard deviation; then a learned scale "
        "(gamma) and shift (beta) per feature let the network choose a better range. The "
        "shape is unchanged ([32, 128] → [32, 128]). It needs more than one number per feature "
        "to measure a spread, so a batch of one row is refused."
    )
    inputs = (Port("tensor", description="[batch, features] or [batch, features, length]"),)
    outputs = TENSOR_OUT
    params = (Param("num_features", "int", 128, "Number of features (the size of dimension 1)", min=1),)
    stateful = True

    @classmethod
    def to_python(cls, code, params, tensor):   # its weights start at 1 and 0: no random numbers
        layer = code.value(f"nn.{cls.type}({params['num_features']!r})", "norm_layer")
        return {"tensor": code.value(f"{layer}({tensor})", "normalised")}

    def run(self, ctx, params, tensor):
        need_rank(tensor, (2, 3), "BatchNorm1d", "[batch, features] (or [batch, features, length])")
        features = params["num_features"]
        check_channels(tensor, 1, features, "num_features", "BatchNorm1d")
        layer = build_layer(ctx, 4 * features, "BatchNorm1d parameters", lambda: nn.BatchNorm1d(features))
        x = to_layer_dtype(tensor, layer)
        if not layer.training:
            return {"tensor": layer(x)}
        if x.numel() // features < 2:
            raise NodeError(f"BatchNorm1d needs more than one value per feature to compute a spread, but "
                            f"the input {shape_str(x.shape)} has one; use a batch of two or more rows")
        # Batch statistics, as in training, without moving the running averages (see BatchNorm2d).
        return {"tensor": F.batch_norm(x, None, None, layer.weight, layer.bias, True, 0.0, layer.eps)}


@register
class GroupNorm(LibraryNode):
    type = "GroupNorm"
    category = "Normalization"
    description = "Normalises each sample's channels in groups, so it works the same for any batch size."
    details = (
        "The 'num_channels' channels are split into 'num_groups' equal groups (so num_channels "
        "must be divisible by num_groups). For every sample on its own, each group's numbers "
        "(all its channels and pixels) are shifted to mean 0 and scaled to spread 1, then a "
        "learned scale and shift per channel are applied. Unlike BatchNorm it does not depend "
        "on the other samples of the batch, which is why diffusion U-Nets use it. The shape is "
        "unchanged ([2, 256, 8, 8] → [2, 256, 8, 8]). With num_groups 1 it normalises the whole "
        "sample like LayerNorm; with num_groups = num_channels each channel on its own, like "
        "InstanceNorm."
    )
    inputs = (Port("tensor", description="[batch, channels, ...]"),)
    outputs = TENSOR_OUT
    params = (
        Param("num_groups", "int", 32, "How many groups the channels are split into", min=1),
        Param("num_channels", "int", 256, "Channels of the input (divisible by num_groups)", min=1),
    )

    @classmethod
    def to_python(cls, code, params, tensor):   # its weights start at 1 and 0: no random numbers
        layer = code.value(f"nn.{cls.type}({params['num_groups']!r}, {params['num_channels']!r})", "norm_layer")
        return {"tensor": code.value(f"{layer}({tensor})", "normalised")}
    stateful = True

    def run(self, ctx, params, tensor):
        groups, channels = params["num_groups"], params["num_channels"]
        if channels % groups:
            raise NodeError(f"GroupNorm: num_channels={channels} is not divisible by num_groups={groups}; "
                            "choose a number of groups that divides the channel count (e.g. "
                            f"{max(d for d in range(1, min(groups, channels) + 1) if channels % d == 0)})")
        if tensor.dim() < 2:
            raise NodeError(f"GroupNorm expects a tensor [batch, channels, ...], but got shape "
                            f"{shape_str(tensor.shape)} ({tensor.dim()}-D)")
        check_channels(tensor, 1, channels, "num_channels", "GroupNorm")
        layer = build_layer(ctx, 2 * channels, "GroupNorm parameters", lambda: nn.GroupNorm(groups, channels))
        return {"tensor": layer(to_layer_dtype(tensor, layer))}


@register
class InstanceNorm2d(LibraryNode):
    type = "InstanceNorm2d"
    category = "Normalization"
    description = "Normalises every channel of every image on its own to mean 0 and spread 1."
    details = (
        "For each image and each of its channels separately, the node subtracts that channel's "
        "mean over height × width and divides by its standard deviation, so the overall "
        "brightness and contrast of every channel are removed: style transfer and image "
        "generators use it. With 'affine' on, a learned scale and shift per channel are "
        "applied afterwards. The shape is unchanged ([1, 64, 16, 16] → [1, 64, 16, 16]) and "
        "'num_features' must equal the number of channels. A channel needs more than one pixel "
        "to have a spread."
    )
    inputs = (Port("tensor", description="[batch, channels, height, width] or [channels, height, width]"),)
    outputs = TENSOR_OUT
    params = (
        Param("num_features", "int", 64, "Number of channels of the input", min=1),
        Param("affine", "bool", False, "Learn a scale and shift per channel"),
    )

    @classmethod
    def to_python(cls, code, params, tensor):   # its weights start at 1 and 0: no random numbers
        layer = code.value(f"nn.{cls.type}({params['num_features']!r}, affine={params['affine']!r})", "norm_layer")
        return {"tensor": code.value(f"{layer}({tensor})", "normalised")}
    stateful = True

    def run(self, ctx, params, tensor):
        need_rank(tensor, (3, 4), "InstanceNorm2d", "[batch, channels, height, width] (or [channels, height, width])")
        features, affine = params["num_features"], params["affine"]
        check_channels(tensor, -3, features, "num_features", "InstanceNorm2d")
        if tensor.shape[-1] * tensor.shape[-2] < 2:
            raise NodeError(f"InstanceNorm2d needs more than one pixel per channel to compute a spread, but "
                            f"the input {shape_str(tensor.shape)} has one")
        layer = build_layer(ctx, 2 * features, "InstanceNorm2d parameters",
                            lambda: nn.InstanceNorm2d(features, affine=affine))
        return {"tensor": layer(to_layer_dtype(tensor, layer))}
