"""Sliding a small kernel over an image."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from apps.graphs.nodes.base import NodeError, Param, Port
from apps.graphs.nodes.library._helpers import LibraryNode, as_float, need_rank, shape_str
from apps.graphs.nodes.library.cnn import KERNEL_PRESETS, custom_kernel

KERNELS = {"Blur3x3": [[1 / 9] * 3] * 3, **KERNEL_PRESETS}   # Blur: the average of 9 pixels


class SlidingWindow2D(LibraryNode):
    type = "edu:SlidingWindow2D"
    category = "EDU"
    description = "Slides a small kernel over an image: each output pixel is a weighted sum of its neighbours."
    details = (
        "The kernel is a small grid of weights. It is laid on the image's top-left corner, "
        "each weight is multiplied by the pixel under it, the products are added up into one "
        "output pixel, and the kernel moves one pixel on (this is what a convolution layer "
        "does, with weights it learns). Choose a ready-made 3×3 kernel (Blur averages, "
        "EdgeDetection and VerticalEdge light up edges, Sharpen strengthens them) or "
        "'Custom' and fill in a kernel_size × kernel_size grid of 'weights'. Every channel of "
        "a (C, H, W) image (or a single (H, W) one) gets the same kernel. Without 'padding' "
        "each side loses kernel_size − 1 pixels (28 × 28 → 26 × 26 with 3×3); padding 1 "
        "keeps a 3×3 result the same size."
    )
    inputs = (Port("image", description="(C, H, W) or (H, W)"),)
    outputs = (Port("image"),)
    params = (
        Param("preset", "select", "Blur3x3", "A ready-made kernel, or Custom",
              options=(*KERNELS, "Custom")),
        Param("kernel_size", "int", 3, "Side of a Custom kernel", min=1, max=15),
        Param("weights", "grid", [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]],
              "The Custom kernel's weights, kernel_size rows of kernel_size numbers"),
        Param("padding", "int", 0, "Rings of zeros added around the image", min=0, max=64),
    )

    def run(self, ctx, params, image):
        need_rank(image, (2, 3), "SlidingWindow2D", "(C, H, W) or (H, W)")
        x = as_float(image if image.dim() == 3 else image.unsqueeze(0))
        kernel = self._kernel(params).to(x.device)
        size, channels = kernel.shape[0], x.shape[0]
        if min(x.shape[1:]) + 2 * params["padding"] < size:
            raise NodeError(f"SlidingWindow2D: a {size} × {size} kernel does not fit in the "
                            f"{shape_str(image.shape)} image with padding {params['padding']}")
        weight = kernel.expand(channels, 1, size, size)
        out = F.conv2d(x.unsqueeze(0), weight, padding=params["padding"], groups=channels)[0]
        return {"image": out if image.dim() == 3 else out[0]}

    @staticmethod
    def _kernel(params) -> torch.Tensor:
        if params["preset"] != "Custom":
            return torch.tensor(KERNELS[params["preset"]], dtype=torch.float32)
        return custom_kernel(params, "SlidingWindow2D")
