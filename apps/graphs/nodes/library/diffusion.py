"""Diffusion nodes: noise, blending and upsampling, the timestep embedding, a small U-Net that
predicts noise, the DDPM sampler that turns noise into an image, and the loop that trains it.

The schedule (betas, alphas, alpha-bars) is computed the same way by the sampler and the
training loop, so a model trained with one setting samples well with the same setting.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..base import NodeError, Param, Port, parse_int_list, register
from ._datasets import DataLoader as BatchLoader, first_sample
from ._helpers import (LibraryNode, as_float, broadcast_shape, build_layer, need_rank, normal_init, numel,
                       seed_value, shape_str, sizes)
from .training import _device, _reported, _SizeGuard, capture_epoch

CATEGORY = "Diffusion"
MAX_LEVELS = 6          # DiffusionUNet's depth (entries of channel_mult); each halves the image
SCHEDULES = ("linear", "cosine")


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed_value(seed))


# -- noise, blending, upsampling ----------------------------------------------------------------

@register
class GaussianNoise(LibraryNode):
    type = "GaussianNoise"
    category = CATEGORY
    description = "Makes a tensor of random Gaussian noise, the same every time for the same seed."
    details = (
        "Every number is drawn on its own from a bell curve centred on 'mean' with spread "
        "'std' (with the defaults: mostly between -2 and 2, about 0 on average). Diffusion "
        "models are built on such noise: training adds it to images, and sampling starts from "
        "pure noise and removes it step by step. The shape comes from 'shape' (e.g. \"1,3,8,8\": "
        "one 3-channel 8 × 8 image), or, when a tensor is wired into 'shape_ref', from that "
        "tensor, so the noise always matches the image it is mixed with. The same 'seed' gives "
        "the same noise on every run."
    )
    inputs = (Port("shape_ref", optional=True, description="a tensor whose shape the noise copies"),)
    outputs = (Port("noise"),)
    params = (
        Param("shape", "string", "1,3,8,8", "Sizes of the noise, e.g. 1,3,8,8 (used when shape_ref is not wired)"),
        Param("mean", "float", 0.0, "Centre of the bell curve"),
        Param("std", "float", 1.0, "Spread of the bell curve (0 = no noise, every number is the mean)", min=0.0),
        Param("seed", "int", 42, "The same seed gives the same noise"),
    )
    cacheable = False

    def run(self, ctx, params, shape_ref=None):
        shape = list(shape_ref.shape) if shape_ref is not None else sizes(params, "shape")
        ctx.check_size(numel(shape), "GaussianNoise's tensor")
        noise = torch.randn(shape, generator=_generator(params["seed"]), dtype=torch.float32)
        noise = noise * params["std"] + params["mean"]
        device = shape_ref.device if shape_ref is not None else ctx.device
        return {"noise": noise.to(device)}


@register
class Lerp(LibraryNode):
    type = "Lerp"
    category = CATEGORY
    description = "Blends two tensors: alpha × a + (1 − alpha) × b."
    details = (
        "Linear interpolation mixes two tensors number by number: alpha 1 gives tensor_a, "
        "alpha 0 gives tensor_b, and 0.5 the half-way mix. Blending a clean image (a) with "
        "noise (b) at smaller and smaller alpha shows what the forward diffusion process does: "
        "the picture fades into noise. (Real diffusion uses √ᾱ and √(1 − ᾱ) as the two weights "
        "so the spread stays the same, but the idea is this blend.) A tensor wired into "
        "'alpha' replaces the param, e.g. one alpha per image of a batch ([4, 1, 1, 1]). "
        "The two tensors' shapes must match or broadcast."
    )
    inputs = (Port("tensor_a", description="weighted by alpha"),
              Port("tensor_b", description="weighted by 1 − alpha"),
              Port("alpha", optional=True, description="replaces the alpha param when wired"))
    outputs = (Port("tensor"),)
    params = (Param("alpha", "float", 0.5, "Weight of tensor_a, usually 0 to 1 (1 − alpha goes to tensor_b)"),)

    def run(self, ctx, params, tensor_a, tensor_b, alpha=None):
        a, b = as_float(tensor_a), as_float(tensor_b)
        shape = broadcast_shape(a, b, "blend")
        if alpha is None:
            weight = torch.tensor(params["alpha"], dtype=a.dtype, device=a.device)
        else:
            weight = as_float(alpha).to(a.device)
            try:
                torch.broadcast_shapes(shape, weight.shape)
            except RuntimeError:
                raise NodeError(f"Lerp: 'alpha' of shape {shape_str(weight.shape)} does not fit the blended "
                                f"shape {shape_str(shape)}; give one number, or sizes that are equal or 1 "
                                "compared from the right") from None
        return {"tensor": weight * a + (1.0 - weight) * b}


UPSAMPLE_RANKS = {"nearest": (3, 4, 5), "bilinear": (4,), "area": (3, 4, 5)}


@register
class Upsample(LibraryNode):
    type = "Upsample"
    category = CATEGORY
    description = "Makes feature maps larger (or smaller) by a fixed rule, without learned weights."
    details = (
        "Multiplies the height and width (every dimension after batch and channels) by "
        "'scale_factor': 2 doubles them, so [1, 64, 4, 4] becomes [1, 64, 8, 8], and 0.5 "
        "halves them. 'nearest' copies each pixel into a block, 'bilinear' blends neighbouring "
        "pixels for a smoother result (images [N, C, H, W] only), 'area' averages, which suits "
        "shrinking. A U-Net's decoder uses it to grow the image back; ConvTranspose2d does the "
        "same job with weights it learns."
    )
    inputs = (Port("tensor", description="[batch, channels, ...] with 1 to 3 spatial dimensions"),)
    outputs = (Port("tensor"),)
    params = (
        Param("mode", "select", "nearest", "How new pixels are filled in", options=tuple(UPSAMPLE_RANKS)),
        Param("scale_factor", "float", 2.0, "Multiplies every spatial size (2 doubles, 0.5 halves)", min=0.1),
    )

    def run(self, ctx, params, tensor):
        mode, scale = params["mode"], params["scale_factor"]
        need_rank(tensor, UPSAMPLE_RANKS[mode], f"Upsample ({mode})", "[batch, channels, ...]")
        out_shape = list(tensor.shape[:2]) + [math.floor(s * scale) for s in tensor.shape[2:]]
        if min(out_shape[2:]) < 1:
            raise NodeError(f"Upsample: scale_factor {scale} shrinks {shape_str(tensor.shape)} to "
                            f"{shape_str(out_shape)}, which has no pixels left; use a larger scale_factor")
        ctx.check_size(numel(out_shape), "Upsample's result")
        options = {"align_corners": False} if mode == "bilinear" else {}
        out = F.interpolate(as_float(tensor), scale_factor=scale, mode=mode, **options)
        return {"tensor": out if tensor.is_floating_point() else out.to(tensor.dtype)}


# -- the timestep embedding ---------------------------------------------------------------------

class TimeEmbedding(nn.Module):
    """Sinusoidal frequencies of t (half sines, half cosines), then Linear(D, 4D) → SiLU →
    Linear(4D, D), initialised the way CodefyUI does it so the same seed gives its numbers."""

    def __init__(self, dim: int, max_period: int, seed: int):
        super().__init__()
        self.dim, self.max_period = dim, max_period
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        normal_init(seed, (self.fc1, self.fc2), scale=1 / math.sqrt(dim))

    @staticmethod
    def weights(dim: int) -> int:
        return 8 * dim * dim + 5 * dim

    def frequencies(self, t: torch.Tensor) -> torch.Tensor:
        half = self.dim // 2
        freqs = torch.exp(-math.log(self.max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
        angles = t.float().unsqueeze(-1) * freqs
        return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.silu(self.fc1(self.frequencies(t))))


def _timesteps(t: torch.Tensor, node: str) -> torch.Tensor:
    """A timestep tensor as [B]: a number becomes [1], a column [B, 1] becomes [B]."""
    if t.dim() == 0:
        return t.reshape(1)
    if t.dim() == 2 and t.shape[1] == 1:
        return t.reshape(-1)
    if t.dim() != 1:
        raise NodeError(f"{node} expects the timestep as one number or a list of them [batch], but got shape "
                        f"{shape_str(t.shape)}")
    return t


def _even_dim(dim: int, node: str, param: str) -> None:
    if dim % 2:
        raise NodeError(f"{node}: '{param}' = {dim} must be even (half of it holds sines, half cosines)")


@register
class TimestepEmbedding(LibraryNode):
    type = "TimestepEmbedding"
    category = CATEGORY
    description = "Turns a diffusion step number t into a vector the U-Net can read."
    details = (
        "The denoising network has to know how noisy its input is: at a large step t it must "
        "remove a lot, near t = 0 only a little. A bare number is hard for a network to use, "
        "so t is spread over embed_dim numbers: sines and cosines of t at embed_dim/2 "
        "frequencies, from fast (period about 6 steps) to slow (period 'max_period'), the same "
        "trick transformers use for word positions. A small learned network (Linear to 4 × "
        "embed_dim, SiLU, Linear back) then reshapes them. A timestep [B] (or one number) "
        "gives an embedding [B, embed_dim]; embed_dim must be even. The weights start from 'seed'."
    )
    inputs = (Port("timestep", description="one number or [batch] of step numbers"),)
    outputs = (Port("embedding", description="[batch, embed_dim]"),)
    params = (
        Param("embed_dim", "int", 32, "Length of the time vector (even)", min=2),
        Param("max_period", "int", 10000, "Longest period of the sines and cosines", min=1),
        Param("seed", "int", 42, "Same seed, same starting weights"),
    )
    stateful = True

    def run(self, ctx, params, timestep):
        dim, period, seed = params["embed_dim"], params["max_period"], params["seed"]
        _even_dim(dim, "TimestepEmbedding", "embed_dim")
        t = _timesteps(timestep, "TimestepEmbedding")
        module = build_layer(ctx, TimeEmbedding.weights(dim), "TimestepEmbedding weights",
                             lambda: TimeEmbedding(dim, period, seed))
        return {"embedding": module(t.to(_model_device(module, ctx.device)))}


# -- the U-Net ----------------------------------------------------------------------------------

class ResidualBlock(nn.Module):
    """GroupNorm → SiLU → 3×3 conv, (+ the time projection), GroupNorm → SiLU → 3×3 conv, plus
    the skip path (a 1×1 conv when the channel count changes); CodefyUI's initialisation. With
    ``time_dim`` 0 the block has no time projection (the deep pack's Edu-ResBlock uses that)."""

    def __init__(self, channels_in: int, channels_out: int, groups: int, time_dim: int, seed: int):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, channels_in)
        self.conv1 = nn.Conv2d(channels_in, channels_out, 3, padding=1)
        self.time_proj = nn.Linear(time_dim, channels_out) if time_dim > 0 else None
        self.norm2 = nn.GroupNorm(groups, channels_out)
        self.conv2 = nn.Conv2d(channels_out, channels_out, 3, padding=1)
        self.skip = nn.Conv2d(channels_in, channels_out, 1) if channels_in != channels_out else nn.Identity()
        drawn = [self.conv1, self.conv2] + [m for m in (self.time_proj, self.skip) if isinstance(m, (nn.Linear, nn.Conv2d))]
        normal_init(seed, drawn, scale=1 / math.sqrt(channels_in))

    @staticmethod
    def weights(c_in: int, c_out: int, time_dim: int) -> int:
        skip = c_in * c_out + c_out if c_in != c_out else 0
        time = time_dim * c_out + c_out if time_dim > 0 else 0
        return 2 * c_in + 9 * c_in * c_out + c_out + time + 2 * c_out + 9 * c_out * c_out + c_out + skip

    def forward(self, x: torch.Tensor, time_emb: torch.Tensor | None = None) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        if time_emb is not None and self.time_proj is not None:
            h = h + self.time_proj(time_emb)[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return h + self.skip(x)


class UNet(nn.Module):
    """A time-conditioned U-Net that predicts the noise in x: stem conv, one residual block per
    level going down (each followed by a 2× max-pool), a bottleneck block, and per level going up
    a 2× nearest upsample, the matching skip concatenated and a residual block; a 1×1 head gives
    as many channels as came in. Level and seed offsets follow CodefyUI's DiffusionUNet."""

    def __init__(self, in_channels: int, base: int, mult: list[int], time_dim: int, groups: int, seed: int):
        super().__init__()
        self.in_channels, self.levels = in_channels, len(mult)
        self.time_mlp = TimeEmbedding(time_dim, 10000, seed)
        self.stem = nn.Conv2d(in_channels, base, 3, padding=1)
        self.down = nn.ModuleList()
        channels, skips = base, []
        for level, m in enumerate(mult[:-1]):
            self.down.append(ResidualBlock(channels, base * m, groups, time_dim, seed + 100 + level))
            channels = base * m
            skips.append(channels)
        self.bottleneck = ResidualBlock(channels, base * mult[-1], groups, time_dim, seed + 200)
        channels = base * mult[-1]
        self.up = nn.ModuleList()
        for level, skip in enumerate(reversed(skips)):
            self.up.append(ResidualBlock(channels + skip, skip, groups, time_dim, seed + 300 + level))
            channels = skip
        self.head = nn.Conv2d(channels, in_channels, 1)
        normal_init(seed + 999, (self.stem, self.head), scale=0.1)

    @staticmethod
    def weights(in_channels: int, base: int, mult: list[int], time_dim: int) -> int:
        total = TimeEmbedding.weights(time_dim) + 9 * in_channels * base + base
        channels, skips = base, []
        for m in mult[:-1]:
            total += ResidualBlock.weights(channels, base * m, time_dim)
            channels = base * m
            skips.append(channels)
        total += ResidualBlock.weights(channels, base * mult[-1], time_dim)
        channels = base * mult[-1]
        for skip in reversed(skips):
            total += ResidualBlock.weights(channels + skip, skip, time_dim)
            channels = skip
        return total + channels * in_channels + in_channels

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4 or x.shape[1] != self.in_channels:
            raise NodeError(f"DiffusionUNet expects images [batch, {self.in_channels}, height, width], but got "
                            f"shape {shape_str(x.shape)}; set in_channels to the images' channels")
        step = 2 ** (self.levels - 1)
        if x.shape[2] % step or x.shape[3] % step:
            raise NodeError(f"DiffusionUNet: with {self.levels} levels the image's height and width must be "
                            f"divisible by {step}, but the input is {x.shape[2]} × {x.shape[3]}; use another "
                            "image size or fewer entries in channel_mult")
        t = _timesteps(t, "DiffusionUNet")
        if t.shape[0] == 1 and x.shape[0] > 1:
            t = t.expand(x.shape[0])
        time_emb = self.time_mlp(t.to(x.device))
        h, skips = self.stem(x), []
        for block in self.down:
            h = block(h, time_emb)
            skips.append(h)
            h = F.max_pool2d(h, 2)
        h = self.bottleneck(h, time_emb)
        for block, skip in zip(self.up, reversed(skips)):
            h = torch.cat([F.interpolate(h, scale_factor=2, mode="nearest"), skip], dim=1)
            h = block(h, time_emb)
        return self.head(h)


@register
class DiffusionUNet(LibraryNode):
    type = "DiffusionUNet"
    category = CATEGORY
    description = "A small U-Net that looks at a noisy image and a step number and predicts the noise in it."
    details = (
        "The network a diffusion model trains. It takes a noisy image [N, in_channels, H, W] "
        "and its step t, and answers with a tensor of the same shape: its guess of the noise. "
        "Going down, each level runs a residual block (two 3×3 convolutions with GroupNorm and "
        "SiLU, plus the time embedding added in) and halves the image; going up, it doubles "
        "the image, joins the matching level's features (the skip connections that give "
        "U-Nets their U shape) and runs another block. 'channel_mult' \"1,2,4\" means three "
        "levels with base_channels × 1, × 2 and × 4 channels, so H and W must be divisible by "
        "4. 'num_groups' must divide every level's channel count. Wire the model into a "
        "DiffusionTrainingLoop, then a DDPMSampler. The weights start from 'seed'."
    )
    outputs = (Port("model", "MODEL"),)
    params = (
        Param("in_channels", "int", 3, "Channels of the images (1 grey, 3 colour)", min=1),
        Param("base_channels", "int", 16, "Channels after the first convolution", min=1),
        Param("channel_mult", "string", "1,2,4", "Channel multiplier of each level, e.g. 1,2,4 (its length is the depth)"),
        Param("time_emb_dim", "int", 32, "Length of the timestep embedding (even)", min=2),
        Param("num_groups", "int", 4, "GroupNorm groups; must divide every level's channels", min=1),
        Param("seed", "int", 42, "Same seed, same starting weights"),
    )
    stateful = True

    def run(self, ctx, params, **inputs):
        c_in, base, t_dim, groups = (params[k] for k in ("in_channels", "base_channels", "time_emb_dim", "num_groups"))
        mult = parse_int_list(params["channel_mult"], "channel_mult")
        if any(m < 1 for m in mult):
            raise NodeError(f"DiffusionUNet: every 'channel_mult' entry must be 1 or more, not {params['channel_mult']!r}")
        if len(mult) > MAX_LEVELS:
            raise NodeError(f"DiffusionUNet: 'channel_mult' has {len(mult)} levels; at most {MAX_LEVELS} are allowed "
                            "(each level halves the image)")
        _even_dim(t_dim, "DiffusionUNet", "time_emb_dim")
        bad = [c for c in [base] + [base * m for m in mult] if c % groups]
        if bad:
            raise NodeError(f"DiffusionUNet: num_groups={groups} must divide every level's channel count "
                            f"(base_channels {base} × channel_mult {','.join(map(str, mult))}), but not {bad[0]}; "
                            "change num_groups or base_channels")
        seed = params["seed"]
        model = build_layer(ctx, UNet.weights(c_in, base, mult, t_dim), "DiffusionUNet weights",
                            lambda: UNet(c_in, base, mult, t_dim, groups, seed))
        return {"model": model}


# -- the noise schedule, sampling and training ----------------------------------------------------

def betas(node: str, schedule: str, steps: int, start: float, end: float) -> torch.Tensor:
    """β_1 … β_T: evenly spaced from beta_start to beta_end (linear), or the cosine schedule
    (Nichol & Dhariwal 2021), which noises more slowly near the clean image."""
    if schedule == "cosine":
        t = torch.linspace(0, steps, steps + 1, dtype=torch.float64) / steps
        alpha_bar = torch.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2
        alpha_bar = alpha_bar / alpha_bar[0]
        return torch.clamp(1 - alpha_bar[1:] / alpha_bar[:-1], 0.0001, 0.999).float()
    if not 0 < start <= end < 1:
        raise NodeError(f"{node}: the linear schedule needs 0 < beta_start ≤ beta_end < 1, but beta_start is "
                        f"{start:g} and beta_end {end:g}")
    return torch.linspace(start, end, steps, dtype=torch.float32)


def _model_device(model: nn.Module, fallback: torch.device) -> torch.device:
    weight = next(iter(model.parameters()), None)
    return weight.device if weight is not None else fallback


@register
class DDPMSampler(LibraryNode):
    type = "DDPMSampler"
    category = CATEGORY
    description = "Turns noise into an image by asking the model to remove a little noise, step after step."
    details = (
        "Sampling runs the diffusion process backwards. It starts from the noise x_T and, for "
        "t = T−1 down to 0, asks the model what noise it sees in x_t, removes that share of it "
        "and (except at the last step) adds back a little fresh noise: "
        "x_{t−1} = (x_t − β_t / √(1 − ᾱ_t) · ε̂) / √α_t + √β_t · z. The schedule of β "
        "('linear' from beta_start to beta_end, or 'cosine') and num_steps must be the ones the "
        "model was trained with. An untrained model only smooths the noise; a trained one draws "
        "pictures like its training images. The output has the noise's shape. The same 'seed' "
        "gives the same picture; the card shows which step it is on."
    )
    inputs = (Port("model", "MODEL"), Port("noise", description="the starting noise x_T, [N, C, H, W]"),
              Port("condition", optional=True, description="reserved for conditioning; not used yet"))
    outputs = (Port("image"),)
    reports_progress = True
    params = (
        Param("num_steps", "int", 20, "Denoising steps (the T the model was trained with)", min=1, max=10000),
        Param("schedule", "select", "linear", "How the noise level changes over the steps", options=SCHEDULES),
        Param("beta_start", "float", 1e-4, "First β of the linear schedule (ignored by cosine)", min=0.0),
        Param("beta_end", "float", 0.02, "Last β of the linear schedule (ignored by cosine)", min=0.0),
        Param("seed", "int", 42, "Picks the fresh noise added at each step"),
    )
    cacheable = False

    def run(self, ctx, params, model, noise, condition=None):
        if not isinstance(model, nn.Module):
            raise NodeError(f"DDPMSampler needs a model (e.g. from DiffusionUNet) on 'model', but received a "
                            f"{type(model).__name__}")
        if condition is not None:
            ctx.log("DDPMSampler: the 'condition' input is not used yet; the image is sampled without it")
        steps = params["num_steps"]
        beta = betas("DDPMSampler", params["schedule"], steps, params["beta_start"], params["beta_end"])
        device = _model_device(model, ctx.device)
        x = as_float(noise).to(device).clone()
        alpha = 1.0 - beta
        alpha_bar = torch.cumprod(alpha, dim=0)
        generator = _generator(params["seed"])
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                for done, t in enumerate(reversed(range(steps))):
                    if ctx.cancelled():
                        ctx.log(f"DDPMSampler stopped after {done} of {steps} steps: the image is only partly denoised")
                        break
                    predicted = model(x, torch.full((x.shape[0],), t, dtype=torch.long, device=device))
                    if predicted.shape != x.shape:
                        raise NodeError(f"DDPMSampler: the model answered {shape_str(predicted.shape)} for an image "
                                        f"{shape_str(x.shape)}; a noise-predicting model must answer the same shape")
                    x = (x - beta[t] / torch.sqrt(1 - alpha_bar[t]) * predicted) / torch.sqrt(alpha[t])
                    if t > 0:
                        x = x + torch.sqrt(beta[t]) * torch.randn(x.shape, generator=generator).to(device)
                    ctx.progress(step=done + 1, of=steps)
        finally:
            model.train(was_training)
        return {"image": x}


DIFFUSION_DEVICES = ("cpu", "cuda", "auto")


@register
class DiffusionTrainingLoop(LibraryNode):
    type = "DiffusionTrainingLoop"
    category = CATEGORY
    description = "Trains a noise-predicting model (a DiffusionUNet) on a dataset of images."
    details = (
        "For every batch of clean images x₀ the loop picks a random step t for each image, "
        "mixes in that much noise ε, x_t = √ᾱ_t · x₀ + √(1 − ᾱ_t) · ε, asks the model to "
        "guess ε from x_t and t, and nudges the weights (Adam, learning rate 'lr') to shrink "
        "the mean squared error between guess and truth. The labels of the dataset are not "
        "used. The Training pane shows the loss falling epoch by epoch. The schedule "
        "('schedule', 'num_timesteps', 'beta_start', 'beta_end') must match the DDPMSampler "
        "used afterwards (num_timesteps there is num_steps). The same 'seed' gives the same "
        "training."
    )
    inputs = (Port("model", "MODEL"), Port("dataset", "DATASET"))
    outputs = (Port("model", "MODEL"), Port("losses"))
    params = (
        Param("epochs", "int", 200, "How many times the model sees every image", min=1, max=1000),
        Param("batch_size", "int", 32, "Images per training step", min=1, max=65536),
        Param("lr", "float", 0.002, "Learning rate of the Adam optimizer", min=0.0),
        Param("num_timesteps", "int", 160, "Noise levels T (the sampler's num_steps)", min=2, max=10000),
        Param("schedule", "select", "linear", "How the noise level grows (the sampler's schedule)", options=SCHEDULES),
        Param("beta_start", "float", 1e-4, "First β of the linear schedule (the sampler's)", min=0.0),
        Param("beta_end", "float", 0.05, "Last β of the linear schedule (the sampler's)", min=0.0),
        Param("device", "select", "cpu", "Where to train ('auto' follows the run's device)", options=DIFFUSION_DEVICES),
        Param("seed", "int", 0, "Picks the steps, the noise and the batches' order"),
    )
    cacheable = False       # it changes its model's weights
    reports_training = True

    def run(self, ctx, params, model, dataset):
        if not isinstance(model, nn.Module):
            raise NodeError(f"DiffusionTrainingLoop needs a model (e.g. from DiffusionUNet) on 'model', but "
                            f"received a {type(model).__name__}")
        if not any(p.requires_grad for p in model.parameters()):
            raise NodeError(f"The model ({type(model).__name__}) has no trainable weights, so there is nothing to train")
        x, _ = first_sample(dataset, "DiffusionTrainingLoop")
        if x.dim() != 3:
            raise NodeError(f"DiffusionTrainingLoop needs a dataset of images [C, H, W], but its samples have "
                            f"shape {shape_str(x.shape)}")
        ctx.check_size(min(params["batch_size"], len(dataset)) * x.numel(), "DiffusionTrainingLoop's batch")
        return _DiffusionTraining(ctx, params, model, dataset).run()


class _DiffusionTraining:
    """One DiffusionTrainingLoop run, reporting progress as TrainingLoop does (the Training pane)."""

    def __init__(self, ctx, params, model, dataset):
        self.ctx, self.epochs, self.lr = ctx, params["epochs"], params["lr"]
        self.device = _device(ctx, params["device"], "DiffusionTrainingLoop")
        self.model = model.to(self.device)
        self.steps = params["num_timesteps"]
        beta = betas("DiffusionTrainingLoop", params["schedule"], self.steps, params["beta_start"], params["beta_end"])
        self.alpha_bar = torch.cumprod(1.0 - beta, dim=0).to(self.device)
        self.generator = _generator(params["seed"])
        shuffle = _generator(params["seed"] + 1)
        self.loader = BatchLoader(dataset, batch_size=params["batch_size"], shuffle=True, generator=shuffle)
        self.batches = len(self.loader)
        self.optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=self.lr)
        self.guard = _SizeGuard(ctx, self.loader)
        self.losses: list[float] = []
        self.epoch = self.batch = 0
        self.best_loss, self.best_epoch = math.inf, 0

    def run(self) -> dict[str, Any]:
        ctx, model = self.ctx, self.model
        before = getattr(model, "epochs_trained", 0)
        if before:
            ctx.log(f"Continuing from the weights of the last run: {before} epochs so far")
        model.train()
        for self.epoch in range(1, self.epochs + 1):
            loss = self.train_epoch()
            if loss is None:
                ctx.log(f"DiffusionTrainingLoop stopped during epoch {self.epoch}: the model keeps what it learnt "
                        f"in {len(self.losses)} full epochs and the batches since")
                break
            self.losses.append(loss)
            if loss < self.best_loss:
                self.best_loss, self.best_epoch = loss, self.epoch
            self.report()
            self.capture_epoch()
        model.epochs_trained = before + len(self.losses)
        return {"model": model, "losses": torch.tensor(self.losses, dtype=torch.float32)}

    def train_epoch(self) -> float | None:
        total, count = 0.0, 0
        for self.batch, batch in enumerate(self.guard.batches(self.loader), start=1):
            if self.ctx.cancelled():
                return None
            x0 = as_float(batch[0] if isinstance(batch, (list, tuple)) else batch).to(self.device)
            size = x0.shape[0]
            with self.guard.step(size):
                t = torch.randint(0, self.steps, (size,), generator=self.generator).to(self.device)
                noise = torch.randn(x0.shape, generator=self.generator).to(self.device)
                ab = self.alpha_bar[t].view(size, *([1] * (x0.dim() - 1)))
                noisy = torch.sqrt(ab) * x0 + torch.sqrt(1 - ab) * noise
                predicted = self.model(noisy, t)
                if predicted.shape != noise.shape:
                    raise NodeError(f"DiffusionTrainingLoop: the model answered {shape_str(predicted.shape)} for "
                                    f"images {shape_str(x0.shape)}; a noise-predicting model must answer the same shape")
                loss = F.mse_loss(predicted, noise)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                total += loss.item()
            self.guard.passed(size)
            count += 1
            self.report()
        return total / count

    def report(self) -> None:
        """The same fields TrainingLoop reports, so the card's bar and the Training pane show them."""
        self.ctx.progress(
            epoch=self.epoch, epochs=self.epochs, batch=self.batch, batches=self.batches,
            losses=[_reported(x) for x in self.losses], val_losses=[], lrs=[self.lr] * len(self.losses),
            best_epoch=self.best_epoch or None,
            best_loss=_reported(self.best_loss) if self.best_epoch else None, config=self.config)

    @functools.cached_property
    def config(self) -> dict[str, Any]:
        return {"model": type(self.model).__name__, "params": sum(p.numel() for p in self.model.parameters()),
                "optimizer": "Adam", "lr": self.lr, "loss_fn": "MSELoss (predicted vs added noise)",
                "epochs": self.epochs, "device": str(self.device), "batch_size": self.loader.batch_size,
                "precision": "fp32", "accumulate_steps": 1, "grad_clip_norm": None,
                "early_stopping_patience": None, "validation": False, "lr_scheduler": None}

    def capture_epoch(self) -> None:
        capture_epoch(self.ctx, self.epoch, self.losses[-1], None, self.model)
