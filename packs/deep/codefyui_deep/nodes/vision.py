"""Image building blocks: a residual block and cutting an image into patch tokens."""
from __future__ import annotations

import torch

from apps.graphs.nodes.base import NodeError, Param, Port
from apps.graphs.nodes.library._helpers import LibraryNode, as_float, build_layer, need_rank, shape_str, step
from apps.graphs.nodes.library.diffusion import ResidualBlock


class ResBlock(LibraryNode):
    type = "deep:Edu-ResBlock"
    category = "Diffusion"
    description = "A residual block, the building unit of a diffusion U-Net: two convolutions plus a skip."
    details = (
        "The block normalises the feature map in groups of channels (GroupNorm), bends it "
        "with SiLU and runs a 3×3 convolution, twice, then adds the input back on (the skip "
        "connection: the block only has to learn a correction). When 'time_emb' is wired "
        "([N, time_emb_dim], from a timestep embedding) a learned projection of it is added "
        "after the first convolution, so the same block can act differently at each "
        "denoising step; without it this is a plain ResNet block. Input [N, in_channels, H, W] "
        "gives [N, out_channels, H, W]; when the channel counts differ a 1×1 convolution "
        "reshapes the skip. 'groups' must divide both channel counts. The weights start from "
        "'seed'."
    )
    inputs = (Port("tensor", description="[N, in_channels, H, W]"),
              Port("time_emb", optional=True, description="[N, time_emb_dim]"))
    outputs = (Port("tensor"),)
    params = (
        Param("in_channels", "int", 8, "Channels of the input", min=1),
        Param("out_channels", "int", 8, "Channels of the output", min=1),
        Param("groups", "int", 4, "GroupNorm groups; must divide both channel counts", min=1),
        Param("time_emb_dim", "int", 32, "Size of the time embedding; 0 = no time input", min=0),
        Param("seed", "int", 42, "Same seed, same starting weights"),
    )
    stateful = True

    def run(self, ctx, params, tensor, time_emb=None):
        c_in, c_out, groups, t_dim = (params[k] for k in
                                      ("in_channels", "out_channels", "groups", "time_emb_dim"))
        need_rank(tensor, (4,), "Edu-ResBlock", "[N, in_channels, H, W]")
        if tensor.shape[1] != c_in:
            raise NodeError(f"Channel mismatch: Edu-ResBlock expects in_channels={c_in}, but the "
                            f"input {shape_str(tensor.shape)} has {tensor.shape[1]}")
        if c_in % groups or c_out % groups:
            raise NodeError(f"Edu-ResBlock: 'groups' = {groups} must divide both in_channels="
                            f"{c_in} and out_channels={c_out}")
        if time_emb is not None:
            time_emb = as_float(time_emb if time_emb.dim() > 1 else time_emb.unsqueeze(0))
            if time_emb.shape[-1] != t_dim:
                raise NodeError(f"Size mismatch: Edu-ResBlock expects 'time_emb' to have last size "
                                f"time_emb_dim={t_dim}, but it has shape {shape_str(time_emb.shape)}")
        weights = 9 * c_out * (c_in + c_out) + t_dim * c_out + (c_in * c_out if c_in != c_out else 0)
        block = build_layer(ctx, weights, "Edu-ResBlock weights",
                            lambda: ResidualBlock(c_in, c_out, groups, t_dim, params["seed"]))
        return {"tensor": block(as_float(tensor), time_emb)}


class Patchify(LibraryNode):
    type = "deep:Edu-Patchify"
    category = "Transformer"
    description = "Cuts an image into square patches and lays them out as a sequence of tokens (ViT)."
    details = (
        "A Vision Transformer reads an image the way a language model reads words: as a "
        "sequence of tokens. This node cuts [B, C, H, W] (or [C, H, W]) into patch_size × "
        "patch_size squares, row by row, and turns each into one token of C·P·P numbers: a "
        "[1, 3, 32, 32] image with patch_size 8 gives a 4 × 4 grid, so 'tokens' [1, 16, 192] "
        "and 'grid' [4, 4]. With 'flatten' off each patch keeps its [C, P, P] shape "
        "([1, 16, 3, 8, 8]), handy for looking at the patches. H and W must be divisible by "
        "patch_size. Verbose internals shows the unfold → permute → flatten chain."
    )
    inputs = (Port("image", description="[B, C, H, W] or [C, H, W]"),)
    outputs = (Port("tokens"), Port("grid"))
    params = (
        Param("patch_size", "int", 8, "Side of one square patch, in pixels", min=1),
        Param("flatten", "bool", True, "Each patch becomes one row of numbers"),
    )
    records_steps = True

    def run(self, ctx, params, image):
        need_rank(image, (3, 4), "Edu-Patchify", "[B, C, H, W] (or [C, H, W])")
        x = as_float(image if image.dim() == 4 else image.unsqueeze(0))
        batch, channels, height, width = x.shape
        size = params["patch_size"]
        if height % size or width % size:
            raise NodeError(f"Edu-Patchify: the image is {height} × {width} pixels, which "
                            f"patch_size={size} does not divide; choose a size that divides both")
        rows, cols = height // size, width // size
        step(ctx, "input", f"The image batch {shape_str(x.shape)}, cut into a {rows} × {cols} "
             f"grid of {size} × {size} patches.",
             {"B": float(batch), "C": float(channels), "H": float(height), "W": float(width),
              "patch_size": float(size), "grid_h": float(rows), "grid_w": float(cols),
              "n_patches": float(rows * cols)}, image=x)
        unfolded = x.unfold(2, size, size).unfold(3, size, size)
        step(ctx, "unfold", f"Slide a {size} × {size} window over the height and the width, "
             f"{size} pixels at a time: [B, C, grid_h, grid_w, P, P].", unfolded=unfolded)
        permuted = unfolded.permute(0, 2, 3, 1, 4, 5).contiguous()
        step(ctx, "permute", "Move the grid position in front of the channels, so each patch's "
             "numbers sit together: [B, grid_h, grid_w, C, P, P].", permuted=permuted)
        if params["flatten"]:
            tokens = permuted.reshape(batch, rows * cols, channels * size * size)
            step(ctx, "flatten", r"Each patch becomes one token of $C \cdot P \cdot P = "
                 f"{channels * size * size}$ numbers.", tokens=tokens)
        else:
            tokens = permuted.reshape(batch, rows * cols, channels, size, size)
            step(ctx, "reshape", "A sequence of patches, each kept as [C, P, P].", tokens=tokens)
        grid = torch.tensor([rows, cols], dtype=torch.long, device=x.device)
        return {"tokens": tokens, "grid": grid}
