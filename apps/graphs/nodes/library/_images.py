"""Pictures as node values: what an IMAGE port carries and what the plot nodes draw.

A node that draws (Visualize, ScatterPlot2D, DecisionBoundary) outputs a ``PngImage``: the
PNG's bytes, rendered on the server, so a class sees it on the card and in the Inspector
with no script, and a capture keeps it as it is (immutable, picklable across the run
workers). An IMAGE input takes a ``PngImage``, a PIL image or a tensor ([H, W], [C, H, W]
or [1, C, H, W], values 0…1 or 0…255) through ``as_pil``; a picture wired into a TENSOR input
becomes [C, H, W] in 0…1 (``as_tensor``), as ImageReader's tensor is.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy
import torch

from ..base import NodeError


@dataclass(frozen=True)
class PngImage:
    data: bytes          # the PNG file
    width: int           # px
    height: int
    title: str = ""      # what it shows, in words (alt text, download name)

    def __repr__(self) -> str:  # the run log and Print show this, never the bytes
        return f"PngImage({self.width}×{self.height}{', ' + repr(self.title) if self.title else ''})"


def png_of(image: Any, title: str = "") -> PngImage:
    """A PIL image as a PngImage."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return PngImage(buffer.getvalue(), image.width, image.height, title)


def as_pil(value: Any, port: str, node: str) -> Any:
    """An IMAGE input as a PIL image (RGB, RGBA or L), or a NodeError naming the port."""
    from PIL import Image

    if isinstance(value, PngImage):
        return Image.open(io.BytesIO(value.data))
    if isinstance(value, Image.Image):
        return value
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu()
        if t.dim() == 4 and t.shape[0] == 1:
            t = t[0]
        if t.dim() == 3 and t.shape[0] in (1, 3, 4):
            t = t.permute(1, 2, 0)
        if t.dim() == 3 and t.shape[-1] == 1:
            t = t[..., 0]
        if t.dim() not in (2, 3) or (t.dim() == 3 and t.shape[-1] not in (3, 4)) or t.numel() == 0:
            raise NodeError(f"{node}: '{port}' needs an image tensor [H, W], [C, H, W] or [1, C, H, W] "
                            f"with 1, 3 or 4 channels, got shape {list(value.shape)}")
        t = t.float()
        if t.max() <= 1.0:
            t = t * 255
        array = t.clamp(0, 255).round().to(torch.uint8).numpy()
        return Image.fromarray(array)
    raise NodeError(f"{node}: '{port}' needs an image (a picture or an image tensor), got {type(value).__name__}")


def pixels(image: Any) -> torch.Tensor:
    """A PIL picture as a float tensor [C, H, W] of values 0 … 1 (torchvision's ToTensor)."""
    array = numpy.asarray(image, dtype=numpy.uint8)
    if array.ndim == 2:
        array = array[:, :, None]
    return torch.from_numpy(array.copy()).permute(2, 0, 1).float().div(255.0)


def as_tensor(value: Any) -> torch.Tensor:
    """A PngImage or PIL image as a float tensor [C, H, W] with values 0…1."""
    return pixels(as_pil(value, "image", ""))
