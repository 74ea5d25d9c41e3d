"""Convolutional network nodes: convolutions, pooling, activations, dropout, batch norm."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..base import NodeError, Param, Port, register
from ._helpers import (TENSOR_IN, TENSOR_OUT, LibraryNode, as_float, build_layer, check_channels,
                       need_rank, param_value, shape_of, shape_str, step, to_layer_dtype)

CATEGORY = "CNN"
IMAGE_LAYOUT = "[batch, channels, height, width] (or [channels, height, width])"


def _image(x: torch.Tensor, node: str) -> torch.Tensor:
    need_rank(x, (3, 4), node, IMAGE_LAYOUT)
    return x


def _fits(x: torch.Tensor, kernel: int, padding: int, node: str) -> None:
    h, w = x.shape[-2] + 2 * padding, x.shape[-1] + 2 * padding
    if h < kernel or w < kernel:
        raise NodeError(f"{node}: the input's height × width {x.shape[-2]}×{x.shape[-1]} (with "
                        f"padding {padding}) is smaller than kernel_size {kernel}; use a smaller "
                        "kernel, more padding or a larger input")


def _largest_windowed(params: dict, inputs: dict, channels: int | None = None) -> tuple[int, ...] | None:
    """``largest_shape`` of a node that slides a window over an image (a convolution, a pool):
    the larger of its input and its result, ``channels`` (default: the input's) for each
    window position, kernel_size × kernel_size moved by 'stride' over the input padded by
    'padding'. None where the node will refuse the input itself (its rank, or a window larger
    than it), so that its own message says what is wrong; each node leaves out its own refusals
    too (not the element limit's message, for a padding typed 100000)."""
    shape = shape_of(inputs.get("tensor"))
    if not shape or len(shape) not in (3, 4):
        return None
    k, stride, pad = params["kernel_size"], params["stride"], params.get("padding", 0)
    height, width = shape[-2] + 2 * pad, shape[-1] + 2 * pad
    if height < k or width < k:
        return None
    result = (*shape[:-3], shape[-3] if channels is None else channels, (height - k) // stride + 1,
              (width - k) // stride + 1)
    return max(shape, result, key=math.prod)


def _conv_args(params: dict) -> str:
    """A convolution's settings as its script writes them."""
    return (f"{params['in_channels']!r}, {params['out_channels']!r}, kernel_size={params['kernel_size']!r}, "
            f"stride={params['stride']!r}, padding={params['padding']!r}")


def _kernel_params(in_ch: int, out_ch: int, kernel: int, stride: int, padding: int) -> tuple:
    return (
        Param("in_channels", "int", in_ch, "Channels of the input (1 grey, 3 colour)", min=1),
        Param("out_channels", "int", out_ch, "How many filters, i.e. output channels", min=1),
        Param("kernel_size", "int", kernel, "Width and height of each filter", min=1),
        Param("stride", "int", stride, "Step between filter positions", min=1),
        Param("padding", "int", padding, "Zeros added around the border", min=0),
    )


@register
class Conv2d(LibraryNode):
    type = "Conv2d"
    category = CATEGORY
    description = "Slides small learned filters over an image to detect patterns such as edges."
    details = (
        "Each of the 'out_channels' filters is a small kernel_size × kernel_size grid of "
        "weights for every input channel. It slides over the image 'stride' pixels at a time; "
        "at each position it multiplies the pixels under it by its weights and adds them up, "
        "making one pixel of a feature map. 'padding' adds zeros around the border so the "
        "output can keep the input's size: with in_channels 1, out_channels 32, kernel 3, "
        "stride 1 and padding 1, a [1, 1, 28, 28] image becomes [1, 32, 28, 28]. The input's "
        "channels must equal 'in_channels'."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = _kernel_params(1, 32, 3, 1, 1)
    stateful = True
    records_steps = True

    @classmethod
    def to_python(cls, code, params, tensor):
        code.reseed()
        layer = code.value(f"nn.{cls.type}({_conv_args(params)})", "conv_layer")
        return {"tensor": code.value(f"{layer}({tensor})", "conv")}

    @classmethod
    def largest_shape(cls, params, inputs):
        shape = shape_of(inputs.get("tensor"))
        if shape and len(shape) >= 3 and shape[-3] != params["in_channels"]:
            return None   # refused by run (check_channels)
        return _largest_windowed(params, inputs, params["out_channels"])   # the weights: build_layer

    def run(self, ctx, params, tensor):
        x = _image(tensor, "Conv2d")
        c_in, c_out, k = params["in_channels"], params["out_channels"], params["kernel_size"]
        check_channels(x, -3, c_in, "in_channels")
        _fits(x, k, params["padding"], "Conv2d")
        layer = build_layer(ctx, c_out * c_in * k * k + c_out, "Conv2d weights",
                            lambda: nn.Conv2d(c_in, c_out, k, params["stride"], params["padding"]))
        x = to_layer_dtype(x, layer)
        out = layer(x)
        if ctx.verbose:
            step(ctx, "input_tensor", f"The input image(s), shape {shape_str(x.shape)}.", input=x)
            step(ctx, "kernel_weights", f"{c_out} filters of shape [{c_in}, {k}, {k}] and one "
                 "bias per filter.", weight=layer.weight, bias=layer.bias)
            step(ctx, "convolved_output", "Each output pixel is the filter laid over the "
                 "input: multiply the pixels under it by the weights, add them up and add the bias: "
                 "$$y_{o} = b_o + \\sum_{c,i,j} w_{o,c,i,j}\\, x_{c,i,j}$$", output=out)
        return {"tensor": out}


@register
class ConvTranspose2d(LibraryNode):
    type = "ConvTranspose2d"
    category = CATEGORY
    description = "A learned upsampling layer: makes feature maps larger (the reverse of a strided Conv2d)."
    details = (
        "Each input pixel stamps a learned kernel_size × kernel_size pattern onto a bigger "
        "output, spaced 'stride' pixels apart, and overlapping stamps add up. With the "
        "defaults (in 64, out 32, kernel 2, stride 2) a [1, 64, 8, 8] map becomes "
        "[1, 32, 16, 16]: twice as tall and wide. 'padding' trims the border of the result "
        "and 'output_padding' adds extra rows and columns on one side (it must be smaller "
        "than stride). U-Nets and image generators use it to grow pictures back."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = _kernel_params(64, 32, 2, 2, 0) + (
        Param("output_padding", "int", 0, "Extra rows/columns added on one side", min=0),
    )
    stateful = True

    @classmethod
    def to_python(cls, code, params, tensor):
        code.reseed()
        layer = code.value(f"nn.{cls.type}({_conv_args(params)}, output_padding={params['output_padding']!r})", "conv_layer")
        return {"tensor": code.value(f"{layer}({tensor})", "conv")}

    def run(self, ctx, params, tensor):
        x = _image(tensor, "ConvTranspose2d")
        c_in, c_out, k = params["in_channels"], params["out_channels"], params["kernel_size"]
        stride, pad, extra = params["stride"], params["padding"], params["output_padding"]
        check_channels(x, -3, c_in, "in_channels")
        if extra >= stride:
            raise NodeError(f"'output_padding' = {extra} must be smaller than stride={stride}")
        side = min(x.shape[-2:])
        if (side - 1) * stride + k + extra - 2 * pad < 1:   # the result's smaller side
            raise NodeError(f"ConvTranspose2d: padding {pad} trims away the whole result: an input "
                            f"side of {side} grows to {(side - 1) * stride + k + extra} before padding "
                            f"trims {pad} from each end; use a padding below "
                            f"{((side - 1) * stride + k + extra + 1) // 2}")
        layer = build_layer(ctx, c_in * c_out * k * k + c_out, "ConvTranspose2d weights",
                            lambda: nn.ConvTranspose2d(c_in, c_out, k, stride, pad, extra))
        return {"tensor": layer(to_layer_dtype(x, layer))}


class _Pool(LibraryNode):
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    pool = staticmethod(F.max_pool2d)

    @classmethod
    def to_python(cls, code, params, tensor):
        padding = f", padding={params['padding']!r}" if params.get("padding") else ""
        return {"tensor": code.value(f"F.{cls.pool.__name__}({tensor}, kernel_size={params['kernel_size']!r}, "
                                     f"stride={params['stride']!r}{padding})", "pooled")}

    @classmethod
    def largest_shape(cls, params, inputs):
        if params.get("padding", 0) > params["kernel_size"] // 2:
            return None   # refused by run
        return _largest_windowed(params, inputs)

    def run(self, ctx, params, tensor):
        x = as_float(_image(tensor, self.type))
        k, stride, pad = params["kernel_size"], params["stride"], params.get("padding", 0)
        if pad > k // 2:
            raise NodeError(f"'padding' = {pad} must be at most half of kernel_size={k}")
        _fits(x, k, pad, self.type)
        return {"tensor": self.pool(x, k, stride, pad)}


@register
class MaxPool2d(_Pool):
    type = "MaxPool2d"
    category = CATEGORY
    description = "Shrinks feature maps by keeping the largest value in each small window."
    details = (
        "The image is cut into kernel_size × kernel_size windows, moved 'stride' pixels at a "
        "time, and each window is replaced by its largest number. With the defaults (2 and 2) "
        "height and width halve: [1, 32, 28, 28] becomes [1, 32, 14, 14]; channels stay the "
        "same. It keeps the strongest signals, makes the network cheaper, and lets it ignore "
        "small shifts of a pattern. It has no weights to learn."
    )
    params = (
        Param("kernel_size", "int", 2, "Window width and height", min=1),
        Param("stride", "int", 2, "Step between windows", min=1),
    )
    pool = staticmethod(F.max_pool2d)


@register
class AvgPool2d(_Pool):
    type = "AvgPool2d"
    category = CATEGORY
    description = "Shrinks feature maps by averaging each small window."
    details = (
        "Like MaxPool2d, but each kernel_size × kernel_size window is replaced by the average "
        "of its numbers, which smooths the image. With kernel 2 and stride 2, [1, 32, 28, 28] "
        "becomes [1, 32, 14, 14]. 'padding' adds zeros around the border first (at most half "
        "the kernel size). It has no weights to learn."
    )
    params = (
        Param("kernel_size", "int", 2, "Window width and height", min=1),
        Param("stride", "int", 2, "Step between windows", min=1),
        Param("padding", "int", 0, "Zeros added around the border", min=0),
    )
    pool = staticmethod(F.avg_pool2d)


@register
class AdaptiveAvgPool2d(LibraryNode):
    type = "AdaptiveAvgPool2d"
    category = CATEGORY
    description = "Averages feature maps down to a fixed height × width, whatever the input size."
    details = (
        "You choose the output size and the node picks the windows to average. With the "
        "defaults 1 × 1 every channel is averaged into a single number: [1, 512, 7, 7] becomes "
        "[1, 512, 1, 1]. Networks use it right before the classifier so that pictures of any "
        "size give the same number of features. It has no weights."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (
        Param("output_height", "int", 1, "Height of the result", min=1),
        Param("output_width", "int", 1, "Width of the result", min=1),
    )
    python = "F.adaptive_avg_pool2d({tensor}, ({output_height}, {output_width}))"

    def run(self, ctx, params, tensor):
        x = as_float(_image(tensor, "AdaptiveAvgPool2d"))
        size = (params["output_height"], params["output_width"])
        return {"tensor": F.adaptive_avg_pool2d(x, size)}


# CodefyUI's twelve options, in its order, so imported graphs keep their choice.
ACTIVATIONS = {
    "relu": F.relu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "leaky_relu": F.leaky_relu,
    "elu": F.elu,
    "gelu": F.gelu,
    "silu": F.silu,
    "mish": F.mish,
    "selu": F.selu,
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "hardswish": F.hardswish,
    # PReLU's slope is learnable in a model; here, with no weights to keep, it is PReLU's
    # starting slope 0.25 (a leaky ReLU that keeps a quarter of each negative number).
    "prelu": lambda x: F.prelu(x, torch.tensor([0.25], dtype=x.dtype, device=x.device)),
}
ACTIVATION_CODE = {   # the same functions, as the script writes them
    "relu": "F.relu({x})", "sigmoid": "torch.sigmoid({x})", "tanh": "torch.tanh({x})",
    "leaky_relu": "F.leaky_relu({x})", "elu": "F.elu({x})", "gelu": "F.gelu({x})", "silu": "F.silu({x})",
    "mish": "F.mish({x})", "selu": "F.selu({x})", "softmax": "torch.softmax({x}, dim=-1)",
    "hardswish": "F.hardswish({x})", "prelu": "F.prelu({x}, torch.tensor([0.25]))  # PReLU's starting slope",
}


@register
class Activation(LibraryNode):
    type = "Activation"
    category = CATEGORY
    description = "Applies a non-linear function (ReLU, sigmoid, tanh, …) to every number."
    details = (
        "Without a bend between layers, stacked layers collapse into one straight-line "
        "function; activations add that bend. Each number is changed on its own and the shape "
        "stays the same ([1, 32, 28, 28] → [1, 32, 28, 28]). relu turns negatives into 0, "
        "sigmoid squashes into 0..1, tanh into -1..1; leaky_relu, prelu (slope 0.25), elu, "
        "gelu, silu, mish, selu and hardswish are variants of relu that let some negative "
        "signal through. softmax works along the last dimension and turns each row into "
        "probabilities that sum to 1."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (Param("function", "select", "relu", "Which function to apply",
                    options=tuple(ACTIVATIONS)),)

    @classmethod
    def to_python(cls, code, params, tensor):
        return {"tensor": code.value(ACTIVATION_CODE[params["function"]].format(x=tensor), params["function"])}

    @classmethod
    def largest_shape(cls, params, inputs):
        return shape_of(inputs.get("tensor"))   # each number changed on its own

    def run(self, ctx, params, tensor):
        return {"tensor": ACTIVATIONS[params["function"]](as_float(tensor))}


@register
class Dropout(LibraryNode):
    type = "Dropout"
    category = CATEGORY
    description = "Randomly sets a fraction p of the numbers to 0 and scales the rest up."
    details = (
        "During training, Dropout switches off each number with probability 'p' and divides "
        "the survivors by (1 - p), so the average stays about the same. The network cannot "
        "rely on any single feature and learns more robust ones. The shape does not change "
        "([1, 16] → [1, 16]). This node always applies dropout (training behaviour) so you "
        "can see its effect; a trained model switches it off when making predictions. p = 0 "
        "keeps everything, p = 1 zeroes everything."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (Param("p", "float", 0.5, "Chance that each number is set to 0", min=0.0, max=1.0),)
    uses_rng = True

    @classmethod
    def to_python(cls, code, params, tensor):
        p = params["p"]
        if p == 0:
            return {"tensor": tensor}
        if p == 1:
            return {"tensor": code.value(f"torch.zeros_like({tensor})", "dropped")}
        keep = code.value(f"torch.rand({tensor}.shape, generator={code.generator()}) >= {p!r}", "keep")
        return {"tensor": code.value(f"{tensor} * {keep}.to({tensor}.dtype) / {1 - p!r}", "dropped")}

    @classmethod
    def draws_random(cls, params):
        return 0 < param_value(cls, params, "p") < 1

    def run(self, ctx, params, tensor):
        x, p = as_float(tensor), params["p"]
        if p == 0:
            return {"tensor": x}
        if p == 1:
            return {"tensor": torch.zeros_like(x)}
        # Same maths as F.dropout(x, p, training=True); the mask is drawn from the run's
        # generator so a seeded run drops the same numbers every time.
        keep = torch.rand(x.shape, generator=ctx.generator()) >= p
        return {"tensor": x * keep.to(device=x.device, dtype=x.dtype) / (1 - p)}


@register
class BatchNorm2d(LibraryNode):
    type = "BatchNorm2d"
    category = CATEGORY
    description = "Normalises each channel to mean 0 and spread 1 over the batch, then rescales it."
    details = (
        "For every channel the node takes all its numbers across the batch and the image, "
        "subtracts their mean and divides by their standard deviation, so each channel is "
        "centred on 0 with a spread of 1. Then a learned scale (gamma) and shift (beta) per "
        "channel let the network choose a better range. The shape is unchanged "
        "([8, 32, 28, 28] → [8, 32, 28, 28]) and 'num_features' must equal the number of "
        "channels. It keeps training stable and fast."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (Param("num_features", "int", 32, "Number of channels of the input", min=1),)
    stateful = True
    records_steps = True

    @classmethod
    def to_python(cls, code, params, tensor):   # a fresh layer trains: it normalises with the batch's own statistics
        layer = code.value(f"nn.BatchNorm2d({params['num_features']!r})", "batch_norm_layer")
        return {"tensor": code.value(f"{layer}({tensor})", "normalised")}

    def run(self, ctx, params, tensor):
        x = _image(tensor, "BatchNorm2d")
        channels = params["num_features"]
        check_channels(x, -3, channels, "num_features")
        layer = build_layer(ctx, 4 * channels, "BatchNorm2d parameters",
                            lambda: nn.BatchNorm2d(channels))
        x = to_layer_dtype(x, layer)
        batched = x if x.dim() == 4 else x.unsqueeze(0)
        if layer.training:
            if batched.numel() // channels < 2:
                raise NodeError(f"BatchNorm2d needs more than one value per channel to compute a "
                                f"spread, but the input {shape_str(x.shape)} has one; use a "
                                "larger batch or image")
            # Batch statistics, as in training, without updating the running averages: the
            # persisted layer only changes when a training node trains it.
            out = F.batch_norm(batched, None, None, layer.weight, layer.bias, True, 0.0, layer.eps)
            mean = batched.mean(dim=(0, 2, 3))
            var = batched.var(dim=(0, 2, 3), unbiased=False)
        else:
            out = layer(batched)
            mean, var = layer.running_mean, layer.running_var
        if ctx.verbose:
            shape = (1, channels, 1, 1)
            normal = (batched - mean.reshape(shape)) / torch.sqrt(var.reshape(shape) + layer.eps)
            step(ctx, "input", f"The input, shape {shape_str(x.shape)}.", input=x)
            step(ctx, "per_channel_mean", "$\\mu_c$: the mean of each channel over batch, height "
                 "and width.", mean=mean)
            step(ctx, "per_channel_var", "$\\sigma_c^2$: the variance of each channel.", var=var)
            step(ctx, "normalize", "$\\hat x = (x - \\mu_c) / \\sqrt{\\sigma_c^2 + \\epsilon}$.",
                 normalized=normal if x.dim() == 4 else normal.squeeze(0))
            step(ctx, "scale_shift", "$y = \\gamma_c \\hat x + \\beta_c$ with the learned scale and "
                 "shift.", gamma=layer.weight, beta=layer.bias,
                 output=out if x.dim() == 4 else out.squeeze(0))
        return {"tensor": out if x.dim() == 4 else out.squeeze(0)}


SEQUENCE_LAYOUT = "[batch, channels, length] (or [channels, length])"


@register
class Conv1d(LibraryNode):
    type = "Conv1d"
    category = CATEGORY
    description = "Slides small learned filters along a sequence (sound, sensor readings) to detect patterns."
    details = (
        "Conv1d is Conv2d for signals with one direction, such as a sound wave or a row of "
        "sensor readings over time. Each of the 'out_channels' filters is a row of kernel_size "
        "weights for every input channel; it slides along the sequence 'stride' steps at a "
        "time, multiplies the values under it by its weights and adds them up (plus a bias): "
        "one output value. 'padding' adds zeros at both ends so the output can keep the "
        "input's length: with in_channels 1, out_channels 32, kernel 3, stride 1 and padding 1 "
        "a [1, 1, 100] signal becomes [1, 32, 100]. The input's channels must equal 'in_channels'."
    )
    inputs = (Port("tensor", description="[batch, channels, length] or [channels, length]"),)
    outputs = TENSOR_OUT
    params = _kernel_params(1, 32, 3, 1, 1)
    stateful = True

    @classmethod
    def to_python(cls, code, params, tensor):
        code.reseed()
        layer = code.value(f"nn.{cls.type}({_conv_args(params)})", "conv_layer")
        return {"tensor": code.value(f"{layer}({tensor})", "conv")}

    def run(self, ctx, params, tensor):
        need_rank(tensor, (2, 3), "Conv1d", SEQUENCE_LAYOUT)
        c_in, c_out, k = params["in_channels"], params["out_channels"], params["kernel_size"]
        stride, pad = params["stride"], params["padding"]
        check_channels(tensor, -2, c_in, "in_channels", "Conv1d")
        if tensor.shape[-1] + 2 * pad < k:
            raise NodeError(f"Conv1d: the input's length {tensor.shape[-1]} (with padding {pad}) is "
                            f"smaller than kernel_size {k}; use a smaller kernel, more padding or a longer input")
        layer = build_layer(ctx, c_out * c_in * k + c_out, "Conv1d weights",
                            lambda: nn.Conv1d(c_in, c_out, k, stride, pad))
        return {"tensor": layer(to_layer_dtype(tensor, layer))}


# Classical 3×3 filters from image processing (as CodefyUI names them).
KERNEL_PRESETS = {
    "EdgeDetection3x3": [[-1.0, -1.0, -1.0], [-1.0, 8.0, -1.0], [-1.0, -1.0, -1.0]],  # Laplacian
    "Sharpen3x3": [[0.0, -1.0, 0.0], [-1.0, 5.0, -1.0], [0.0, -1.0, 0.0]],
    "VerticalEdge3x3": [[-1.0, 0.0, 1.0], [-1.0, 0.0, 1.0], [-1.0, 0.0, 1.0]],       # Prewitt, left to right
}


def _grid_numbers(grid) -> list:
    if isinstance(grid, (list, tuple)):
        return [n for row in grid for n in _grid_numbers(row)]
    return [grid]


def custom_kernel(params: dict, node: str) -> torch.Tensor:
    """A 'Custom' kernel's grid of 'weights' as a float32 [kernel_size, kernel_size] tensor,
    or a NodeError that says what is wrong with it (Conv2dKernel, edu:SlidingWindow2D)."""
    size, numbers = params["kernel_size"], _grid_numbers(params["weights"])
    if len(numbers) != size * size:
        raise NodeError(f"{node}: 'weights' has {len(numbers)} numbers, but kernel_size={size} "
                        f"needs {size * size} ({size} rows of {size}); change kernel_size or refill the grid")
    try:
        values = [float(n) for n in numbers]
    except (TypeError, ValueError):
        raise NodeError(f"{node}: every entry of 'weights' must be a number") from None
    if not all(math.isfinite(v) for v in values):
        raise NodeError(f"{node}: every entry of 'weights' must be a finite number")
    return torch.tensor(values, dtype=torch.float32).reshape(size, size)


@register
class Conv2dKernel(LibraryNode):
    type = "Conv2dKernel"
    category = CATEGORY
    description = "Makes a convolution kernel (a small grid of weights) to feed a Conv2dExplicit."
    details = (
        "A kernel is the small grid of weights a convolution slides over an image. This node "
        "only makes the grid, as a [kernel_size, kernel_size] tensor; wire it into the 'kernel' "
        "input of a Conv2dExplicit to apply it. EdgeDetection3x3 (a Laplacian: 8 in the "
        "middle, -1 around it) lights up pixels that differ from their neighbours; Sharpen3x3 "
        "(5 in the middle, -1 above, below and beside) makes edges crisper; VerticalEdge3x3 "
        "(-1 on the left, +1 on the right) responds where brightness changes from left to "
        "right. 'Custom' uses your own kernel_size × kernel_size grid of 'weights' (the default "
        "grid, a 1 in the middle, leaves an image unchanged)."
    )
    outputs = (Port("tensor", description="[kernel_size, kernel_size]"),)
    params = (
        Param("preset", "select", "EdgeDetection3x3", "A ready-made 3×3 kernel, or Custom",
              options=(*KERNEL_PRESETS, "Custom")),
        Param("kernel_size", "int", 3, "Side of a Custom kernel (1 to 15)", min=1, max=15),
        Param("weights", "grid", [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]],
              "The Custom kernel: kernel_size rows of kernel_size numbers"),
    )

    @classmethod
    def to_python(cls, code, params):
        if params["preset"] != "Custom":
            return {"tensor": code.value(f"torch.tensor({KERNEL_PRESETS[params['preset']]!r}, dtype=torch.float32)", "kernel")}
        size, values = params["kernel_size"], custom_kernel(params, cls.type).tolist()
        return {"tensor": code.value(f"torch.tensor({code.literal(values)}, dtype=torch.float32)", "kernel")}

    def run(self, ctx, params, **inputs):
        if params["preset"] != "Custom":
            return {"tensor": torch.tensor(KERNEL_PRESETS[params["preset"]], dtype=torch.float32,
                                           device=ctx.device)}
        return {"tensor": custom_kernel(params, "Conv2dKernel").to(ctx.device)}


@register
class Conv2dExplicit(LibraryNode):
    type = "Conv2dExplicit"
    category = CATEGORY
    description = "Convolves an image with a kernel you give it (no learned weights), channel by channel."
    details = (
        "The kernel comes in on the 'kernel' input, for example from a Conv2dKernel, instead of "
        "being learned. It slides over every channel of the image separately, 'stride' pixels "
        "at a time; at each position the pixels under it are multiplied by its weights and "
        "added up into one output pixel. Channels are not mixed, so a [1, 3, 28, 28] picture "
        "stays 3 channels: with a 3×3 kernel, stride 1 and padding 1 it becomes [1, 3, 28, 28]; "
        "with padding 0 each side loses a pixel ([1, 3, 26, 26]). The kernel may be [k, k] or "
        "[1, 1, k, k] (the same kernel for every channel), or [C, 1, k, k] (one kernel per "
        "channel); it must be square."
    )
    inputs = (Port("tensor", description="[batch, channels, height, width] (or [channels, height, width])"),
              Port("kernel", description="[k, k], [1, 1, k, k] or [channels, 1, k, k]"))
    outputs = TENSOR_OUT
    params = (
        Param("stride", "int", 1, "Step between kernel positions", min=1),
        Param("padding", "int", 1, "Rings of zeros added around each channel", min=0),
    )

    @classmethod
    def to_python(cls, code, params, tensor, kernel):
        image = code.value(f"{tensor}.float()", "image")
        weight = code.value(f"{kernel}.reshape(1, 1, *{kernel}.shape) if {kernel}.dim() == 2 else {kernel}", "weight")
        code.line("# the same kernel slides over every channel on its own (groups = channels)")
        channels = f"{image}.shape[-3]"
        return {"tensor": code.value(f"F.conv2d({image}, {weight}.expand({channels}, 1, *{weight}.shape[-2:]), "
                                     f"stride={params['stride']!r}, padding={params['padding']!r}, groups={channels})",
                                     "filtered")}

    def run(self, ctx, params, tensor, kernel):
        x = as_float(_image(tensor, "Conv2dExplicit"))
        batched = x if x.dim() == 4 else x.unsqueeze(0)
        channels = batched.shape[1]
        if kernel.dim() == 2:
            kernel = kernel.reshape(1, 1, *kernel.shape)
        elif kernel.dim() != 4:
            raise NodeError(f"Conv2dExplicit: 'kernel' must be [k, k], [1, 1, k, k] or [{channels}, 1, k, k], "
                            f"but it has shape {shape_str(kernel.shape)}")
        k_out, k_in, k_h, k_w = kernel.shape
        if k_h != k_w:
            raise NodeError(f"Conv2dExplicit: the kernel must be square, but it is {k_h} × {k_w} "
                            f"(shape {shape_str(kernel.shape)})")
        if k_in != 1 or k_out not in (1, channels):
            raise NodeError(f"Conv2dExplicit: a kernel of shape {shape_str(kernel.shape)} does not fit an image "
                            f"with {channels} channels; use [k, k], [1, 1, k, k] or [{channels}, 1, k, k]")
        _fits(batched, k_h, params["padding"], "Conv2dExplicit")
        weight = kernel.expand(channels, 1, k_h, k_w).to(dtype=batched.dtype, device=batched.device)
        out = F.conv2d(batched, weight, stride=params["stride"], padding=params["padding"], groups=channels)
        return {"tensor": out if x.dim() == 4 else out.squeeze(0)}
