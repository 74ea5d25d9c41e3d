"""Utility nodes: reshaping, joining, printing, and the two basic layers Linear and Embedding."""
from __future__ import annotations

import math

import torch
from torch import nn

from ..base import NodeError, Param, Port, parse_int_list, register
from ..reprs import readable
from ._helpers import (PAIR_IN, TENSOR_IN, TENSOR_OUT, LibraryNode, build_layer, check_dim,
                       numel, shape_of, shape_str, step, to_layer_dtype)

CATEGORY = "Utility"


@register
class Reshape(LibraryNode):
    type = "Reshape"
    category = CATEGORY
    description = "Rearranges the same numbers into a new shape, e.g. [1, 28, 28] → [1, 784]."
    details = (
        "The numbers are read in order (row by row) and poured into the new 'shape'. The "
        "count must stay the same: a [1, 4, 4] tensor holds 16 numbers, so \"1,16\", \"4,4\" "
        "or \"2,8\" work, but \"-1,784\" (the default, meant for 28×28 images) does not. One "
        "size may be -1, meaning \"whatever makes the count fit\": 16 numbers reshaped to "
        "\"-1,8\" give [2, 8]."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (Param("shape", "string", "-1,784", "New sizes separated by commas; one may be -1"),)

    @classmethod
    def to_python(cls, code, params, tensor):
        shape = ", ".join(str(s) for s in parse_int_list(params["shape"], "shape"))
        return {"tensor": code.value(f"{tensor}.reshape({shape})", "reshaped")}

    def run(self, ctx, params, tensor):
        shape = parse_int_list(params["shape"], "shape")
        if shape.count(-1) > 1 or any(s < -1 or s == 0 for s in shape):
            raise NodeError(f"'shape' {params['shape']!r} is not a valid shape: sizes must be 1 "
                            "or more, and at most one may be -1")
        count, known = tensor.numel(), numel(s for s in shape if s != -1)
        fits = count % known == 0 if -1 in shape else count == known
        if not fits:
            raise NodeError(f"{count} values cannot be reshaped to [{', '.join(map(str, shape))}]"
                            f"; the new shape must hold exactly {count} values, e.g. 1,{count}")
        return {"tensor": tensor.reshape(shape)}


@register
class Flatten(LibraryNode):
    type = "Flatten"
    category = CATEGORY
    description = "Joins all dimensions from start_dim onwards into one long row."
    details = (
        "Flatten keeps the dimensions before 'start_dim' and lays out everything after it in "
        "one line. With the default start_dim 1 the batch dimension survives: a batch of "
        "images [8, 3, 32, 32] becomes [8, 3072], ready for a Linear layer, and [1, 4, 4] "
        "becomes [1, 16]. With start_dim 0 everything becomes a single row."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (Param("start_dim", "int", 1, "First dimension to flatten"),)
    python = "torch.flatten({tensor}, start_dim={start_dim})"

    @classmethod
    def largest_shape(cls, params, inputs):
        return shape_of(inputs.get("tensor"))   # a view, or a copy of as many elements

    def run(self, ctx, params, tensor):
        start = params["start_dim"]
        if tensor.dim() > 0 and not -tensor.dim() <= start < tensor.dim():
            raise NodeError(f"Flatten start_dim={start} needs a tensor with at least "
                            f"{start + 1 if start >= 0 else -start} dimensions, but the input has "
                            f"shape {shape_str(tensor.shape)}; lower start_dim")
        return {"tensor": torch.flatten(tensor, start_dim=start)}


@register
class Concat(LibraryNode):
    type = "Concat"
    category = CATEGORY
    description = "Joins two tensors end to end along an existing dimension."
    details = (
        "tensor_b is attached after tensor_a along 'dim'. Two [2, 3] tensors joined at dim 0 "
        "give [4, 3] (more rows); at dim 1 they give [2, 6] (longer rows). All other sizes "
        "must match. U-Nets and DenseNets use this to combine features from different "
        "layers."
    )
    inputs = PAIR_IN
    outputs = TENSOR_OUT
    params = (Param("dim", "int", 0, "Dimension to join along"),)
    python = "torch.cat([{tensor_a}, {tensor_b}], dim={dim})"

    def run(self, ctx, params, tensor_a, tensor_b):
        a, b = tensor_a, tensor_b
        if a.dim() == 0 or a.dim() != b.dim():
            raise NodeError(f"Concat needs two tensors with the same number of dimensions (at "
                            f"least 1), got {shape_str(a.shape)} and {shape_str(b.shape)}")
        dim = check_dim(a, params["dim"])
        if any(x != y for i, (x, y) in enumerate(zip(a.shape, b.shape)) if i != dim % a.dim()):
            raise NodeError(f"Shape mismatch: to concatenate along dim {dim}, all other sizes "
                            f"must match, got {shape_str(a.shape)} and {shape_str(b.shape)}")
        return {"tensor": torch.cat([a, b], dim=dim)}


@register
class Print(LibraryNode):
    type = "Print"
    category = CATEGORY
    description = "Writes the value it receives into the run log and passes it on unchanged."
    details = (
        "Use Print to peek at anything flowing through a wire: a tensor, a number, a list or a "
        "model. The value appears in the run log, after \"[label]\" when you set a 'label', "
        "so several Prints are easy to tell apart. A long value is cut after 4,000 characters. "
        "The same value leaves through the output, so Print can sit in the middle of a chain "
        "without changing anything."
    )
    inputs = (Port("value", "ANY"),)
    outputs = (Port("value", "ANY"),)
    params = (Param("label", "string", "", "Shown in front of the value in the log"),)

    @classmethod
    def to_python(cls, code, params, value):
        label = params["label"]   # the student's words: a string in the script, never code
        code.line(f"print({code.literal(f'[{label}]')}, {value})" if label else f"print({value})")
        return {"value": value}

    def run(self, ctx, params, value):
        label = params["label"]
        text = printed(value)
        ctx.log(f"[{label}] {text}" if label else text)
        return {"value": value}


PRINT_LIMIT = 4000   # characters of a value Print writes: a run log row, not a file


def printed(value) -> str:
    """The value in words (reprs.readable), cut at PRINT_LIMIT characters: a million-item list
    would otherwise be written whole (13 MB) into the run's log, its record and the student's
    page. A container is formatted only that far."""
    text = readable(value, PRINT_LIMIT + 1)
    return text if len(text) <= PRINT_LIMIT else f"{text[:PRINT_LIMIT]} … (cut at {PRINT_LIMIT:,} characters)"


@register
class Linear(LibraryNode):
    type = "Linear"
    category = CATEGORY
    description = "A fully connected layer: every output is a weighted sum of all inputs plus a bias."
    details = (
        "Linear learns a weight matrix W of shape [out_features, in_features] and a bias b, "
        "and computes y = x·Wᵀ + b on the last dimension. The last size of the input must "
        "equal 'in_features'; it becomes 'out_features': with 16 → 4, an input [1, 16] gives "
        "[1, 4] and [8, 16] gives [8, 4]. The weights start random; training adjusts them. "
        "Turn on Verbose internals to see W, b and the result."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (
        Param("in_features", "int", 512, "Size of the input's last dimension", min=1),
        Param("out_features", "int", 10, "Size of the output's last dimension", min=1),
    )
    stateful = True
    records_steps = True

    @classmethod
    def to_python(cls, code, params, tensor):
        code.reseed()
        layer = code.value(f"nn.Linear({params['in_features']!r}, {params['out_features']!r})", "linear_layer")
        return {"tensor": code.value(f"{layer}({tensor})", "linear")}

    @classmethod
    def largest_shape(cls, params, inputs):
        # The result, or a copy of the input in the layer's dtype; the weights are counted
        # before they are built (build_layer).
        shape = shape_of(inputs.get("tensor"))
        if not shape:
            return None
        return max(shape, (*shape[:-1], params["out_features"]), key=math.prod)

    def run(self, ctx, params, tensor):
        n_in, n_out = params["in_features"], params["out_features"]
        if tensor.dim() == 0 or tensor.shape[-1] != n_in:
            got = tensor.shape[-1] if tensor.dim() else "none"
            raise NodeError(f"Size mismatch: Linear expects the input's last size to be "
                            f"in_features={n_in}, but the input has shape {shape_str(tensor.shape)}"
                            f" (last size {got}); set in_features to {got} or reshape the input")
        layer = build_layer(ctx, n_in * n_out + n_out, "Linear weights",
                            lambda: nn.Linear(n_in, n_out))
        x = to_layer_dtype(tensor, layer)
        out = layer(x)
        if ctx.verbose:
            step(ctx, "input", f"The input $x$, shape {shape_str(x.shape)}.", input=x)
            step(ctx, "weight_matrix", f"The weights $W$, shape [{n_out}, {n_in}]: one row per "
                 "output.", weight=layer.weight)
            step(ctx, "bias_vector", f"The bias $b$, {n_out} numbers added at the end.",
                 bias=layer.bias)
            step(ctx, "linear_output", "$y = x W^T + b$: each output is a weighted sum of the "
                 "inputs plus its bias.", output=out)
        return {"tensor": out}


@register
class Embedding(LibraryNode):
    type = "Embedding"
    category = CATEGORY
    description = "Looks up a learned vector for each whole-number id (e.g. each word's token id)."
    details = (
        "Embedding keeps a table with 'num_embeddings' rows, one per possible id, each row a "
        "vector of 'embedding_dim' numbers. Every id in the input is replaced by its row, so "
        "the shape gains one dimension: ids [1, 5] with embedding_dim 8 give [1, 5, 8]. Ids "
        "must be whole numbers from 0 to num_embeddings - 1. 'padding_idx' names an id whose "
        "row stays all zeros and is never trained (-1 means none). The rows start random and "
        "training moves similar words closer together."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (
        Param("num_embeddings", "int", 10000, "How many ids the table has rows for", min=1),
        Param("embedding_dim", "int", 256, "Length of each vector", min=1),
        Param("padding_idx", "int", -1, "An id whose vector stays zero; -1 = none", min=-1),
    )
    stateful = True
    records_steps = True

    @classmethod
    def to_python(cls, code, params, tensor):
        pad = params["padding_idx"]
        code.reseed()
        table = code.value(f"nn.Embedding({params['num_embeddings']!r}, {params['embedding_dim']!r}, "
                           f"padding_idx={None if pad < 0 else pad!r})", "embedding_table")
        return {"tensor": code.value(f"{table}({tensor}.long())", "embedded")}

    def run(self, ctx, params, tensor):
        rows, dim, pad = params["num_embeddings"], params["embedding_dim"], params["padding_idx"]
        if pad >= rows:
            raise NodeError(f"'padding_idx' = {pad} must be below num_embeddings={rows} "
                            "(or -1 for none)")
        ids = tensor
        if ids.is_floating_point():
            if not torch.equal(ids, ids.round()):
                raise NodeError(f"Embedding needs whole-number ids, but the input "
                                f"{shape_str(ids.shape)} holds fractions; use dtype int64")
        ids = ids.long()
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= rows):
            bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
            raise NodeError(f"Token id {bad} is out of range: num_embeddings={rows} allows ids "
                            f"0 to {rows - 1}; raise num_embeddings to at least {int(ids.max()) + 1}")
        table = build_layer(ctx, rows * dim, "Embedding table",
                            lambda: nn.Embedding(rows, dim, padding_idx=None if pad < 0 else pad))
        out = table(ids)
        if ctx.verbose:
            step(ctx, "indices", f"The ids to look up, shape {shape_str(ids.shape)}.", indices=ids)
            step(ctx, "embedding_table", f"The table: {rows} rows of {dim} numbers.",
                 weight=table.weight)
            step(ctx, "lookup", "Each id is replaced by its row of the table.", output=out)
        return {"tensor": out}
