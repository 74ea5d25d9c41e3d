"""Element-wise maths, reductions and shape changes on tensors."""
from __future__ import annotations

import torch

from ..base import NodeError, Param, Port, parse_int_list, register
from ._helpers import (PAIR_IN, TENSOR_IN, TENSOR_OUT, LibraryNode, as_float, broadcast_shape,
                       check_dim, param_value, shape_of, shape_str, step)

CATEGORY = "Tensor Operations"


@register
class Add(LibraryNode):
    type = "Add"
    category = CATEGORY
    description = "Adds two tensors number by number: tensor_a + alpha × tensor_b."
    details = (
        "Each number of tensor_a is added to the number in the same place of tensor_b, after "
        "multiplying tensor_b by 'alpha' (1 means plain addition, -1 means subtraction). The "
        "shapes must match, or broadcast: a size of 1, or a missing size on the left, is "
        "stretched to fit, so [2, 3] + [3] adds the same row to both rows and gives [2, 3]. "
        "This is how a bias is added and how residual (skip) connections work."
    )
    inputs = PAIR_IN
    outputs = TENSOR_OUT
    params = (Param("alpha", "float", 1.0, "tensor_b is multiplied by this before adding"),)

    @classmethod
    def to_python(cls, code, params, tensor_a, tensor_b):
        alpha = params["alpha"]
        added = tensor_b if alpha == 1 else f"{code.literal(alpha)} * {tensor_b}"
        return {"tensor": code.value(f"{tensor_a} + {added}", "added")}

    def run(self, ctx, params, tensor_a, tensor_b):
        broadcast_shape(tensor_a, tensor_b, "add")
        alpha = params["alpha"]
        return {"tensor": tensor_a + tensor_b if alpha == 1 else tensor_a + alpha * tensor_b}


@register
class Multiply(LibraryNode):
    type = "Multiply"
    category = CATEGORY
    description = "Multiplies two tensors number by number (not matrix multiplication)."
    details = (
        "Each number of tensor_a is multiplied by the number in the same place of tensor_b. "
        "Shapes follow the same broadcasting rule as Add: [2, 3] × [2, 3] gives [2, 3], and "
        "[2, 3] × [1] multiplies everything by one number. Multiplying by a tensor of 0s and "
        "1s is a mask: it keeps some numbers and zeroes the rest. For rows-times-columns "
        "matrix multiplication use MatMul instead."
    )
    inputs = PAIR_IN
    outputs = TENSOR_OUT
    python = "{tensor_a} * {tensor_b}"

    def run(self, ctx, params, tensor_a, tensor_b):
        broadcast_shape(tensor_a, tensor_b, "multiply")
        return {"tensor": tensor_a * tensor_b}


@register
class MatMul(LibraryNode):
    type = "MatMul"
    category = CATEGORY
    description = "Matrix multiplication: each row of tensor_a times each column of tensor_b."
    details = (
        "Every output number is a row of tensor_a multiplied number by number with a column "
        "of tensor_b and summed up (a dot product). So the last size of tensor_a must equal "
        "the second-to-last size of tensor_b: [2, 3] @ [3, 4] gives [2, 4]. Extra sizes in "
        "front are batches and broadcast like in Add: [8, 2, 3] @ [3, 4] gives [8, 2, 4]. "
        "A Linear layer is a MatMul with a learned weight matrix plus a bias."
    )
    inputs = PAIR_IN
    outputs = TENSOR_OUT
    python = "torch.matmul({tensor_a}, {tensor_b})"

    def run(self, ctx, params, tensor_a, tensor_b):
        a, b = tensor_a, tensor_b
        if a.dim() == 0 or b.dim() == 0:
            raise NodeError("MatMul needs tensors with at least one dimension; to multiply by a "
                            "single number use ScalarMultiply")
        dtype = torch.promote_types(a.dtype, b.dtype)
        if dtype == torch.bool or (not dtype.is_floating_point and a.device.type != "cpu"):
            dtype = torch.float32
        a, b = a.to(dtype), b.to(dtype)
        try:  # sizes that do not fit get a message that says which; meta uses no memory
            torch.matmul(a.to("meta"), b.to("meta"))
        except RuntimeError:
            inner_a = a.shape[-1]
            inner_b = b.shape[-2] if b.dim() > 1 else b.shape[0]
            where = "second-to-last size" if b.dim() > 1 else "size"
            if inner_a != inner_b:
                raise NodeError(f"Size mismatch: cannot multiply {shape_str(a.shape)} by "
                                f"{shape_str(b.shape)}: the last size of tensor_a ({inner_a}) "
                                f"must equal the {where} of tensor_b ({inner_b})") from None
            raise NodeError(f"Size mismatch: cannot multiply {shape_str(a.shape)} by "
                            f"{shape_str(b.shape)}: the batch sizes in front of the last two "
                            "must be equal or 1") from None
        return {"tensor": torch.matmul(a, b)}


@register
class Mean(LibraryNode):
    type = "Mean"
    category = CATEGORY
    description = "Averages a tensor along one or more dimensions."
    details = (
        "The numbers along the chosen dimension are added up and divided by how many there "
        "are, so that dimension disappears: the mean over dim -1 (the last) of a [2, 3] "
        "tensor gives [2], one average per row. 'dim' can list several dimensions, e.g. "
        "\"0,1\", or be left empty to average everything into one number. Tick 'keepdim' to "
        "keep the averaged dimensions with size 1 ([2, 3] → [2, 1]), which makes the result "
        "easy to combine with the original tensor."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (
        Param("dim", "string", "-1", "Dimension(s) to average over, e.g. -1 or 0,1; empty = all"),
        Param("keepdim", "bool", False, "Keep averaged dimensions with size 1"),
    )

    @classmethod
    def to_python(cls, code, params, tensor):
        text = str(params["dim"]).strip()
        if text == "":
            return {"tensor": code.value(f"{tensor}.mean()", "mean")}
        dims = tuple(parse_int_list(text, "dim"))
        return {"tensor": code.value(f"{tensor}.mean(dim={dims!r}, keepdim={params['keepdim']!r})", "mean")}

    def run(self, ctx, params, tensor):
        x = as_float(tensor)
        text = str(params["dim"]).strip()
        if text == "":  # everything into one number
            out = x.mean()
            return {"tensor": out.reshape([1] * x.dim()) if params["keepdim"] else out}
        dims = [check_dim(x, d) for d in parse_int_list(text, "dim")]
        if len({d % max(x.dim(), 1) for d in dims}) != len(dims):
            raise NodeError(f"'dim' lists the same dimension twice: {text!r}")
        return {"tensor": x.mean(dim=tuple(dims), keepdim=params["keepdim"])}


@register
class Permute(LibraryNode):
    type = "Permute"
    category = CATEGORY
    description = "Reorders a tensor's dimensions, e.g. swaps rows and columns."
    details = (
        "No number changes; only the order of the directions does. 'dims' names, for each "
        "output position, which input dimension goes there. With \"0,2,1\" a [1, 3, 5] tensor "
        "becomes [1, 5, 3]: the last two dimensions swap, like transposing every matrix. "
        "\"1,2,0\" turns an image [3, 32, 32] (channels first) into [32, 32, 3] (channels "
        "last). Every dimension must be listed exactly once."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (Param("dims", "string", "0,2,1", "New order of the dimensions, e.g. 0,2,1"),)

    @classmethod
    def to_python(cls, code, params, tensor):
        dims = ", ".join(str(d) for d in parse_int_list(params["dims"], "dims"))
        return {"tensor": code.value(f"{tensor}.permute({dims})", "permuted")}

    def run(self, ctx, params, tensor):
        dims = parse_int_list(params["dims"], "dims")
        n = tensor.dim()
        if len(dims) != n or sorted(d % n if -n <= d < n else -999 for d in dims) != list(range(n)):
            example = ",".join(str(i) for i in reversed(range(n))) or "(empty)"
            raise NodeError(f"'dims' must list each of the {n} dimensions of the input "
                            f"{shape_str(tensor.shape)} exactly once (0 to {n - 1}, e.g. "
                            f"{example}), not {params['dims']!r}")
        return {"tensor": tensor.permute(*dims)}


@register
class Squeeze(LibraryNode):
    type = "Squeeze"
    category = CATEGORY
    description = "Removes a dimension of size 1, e.g. [1, 5] → [5]."
    details = (
        "A dimension of size 1 holds no extra numbers, it only adds brackets. Squeeze removes "
        "the one at 'dim' (-1 is the last): [4, 1] becomes [4]. If that dimension is not of "
        "size 1 the tensor comes out unchanged, because removing it would lose numbers. "
        "Unsqueeze does the opposite."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (Param("dim", "int", -1, "Which dimension to remove if its size is 1"),)
    python = "{tensor}.squeeze({dim})"

    def run(self, ctx, params, tensor):
        return {"tensor": tensor.squeeze(check_dim(tensor, params["dim"]))}


@register
class Unsqueeze(LibraryNode):
    type = "Unsqueeze"
    category = CATEGORY
    description = "Adds a dimension of size 1, e.g. [5] → [1, 5]."
    details = (
        "The numbers stay the same; the tensor gets one more pair of brackets at position "
        "'dim'. With dim 0 a [28, 28] image becomes [1, 28, 28], which is how you add a "
        "batch or channel dimension that a layer expects. dim -1 adds it at the end: [5] → "
        "[5, 1]."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (Param("dim", "int", 0, "Where the new size-1 dimension goes"),)
    python = "{tensor}.unsqueeze({dim})"

    def run(self, ctx, params, tensor):
        return {"tensor": tensor.unsqueeze(check_dim(tensor, params["dim"], extra=1))}


@register
class Stack(LibraryNode):
    type = "Stack"
    category = CATEGORY
    description = "Puts two same-shaped tensors together along a new dimension."
    details = (
        "Stack places tensor_a and tensor_b side by side in a brand-new dimension at 'dim'. "
        "Two [3, 4] tensors stacked at dim 0 give [2, 3, 4]: index 0 is tensor_a, index 1 is "
        "tensor_b. Both inputs must have exactly the same shape. Concat is different: it "
        "joins along an existing dimension ([3, 4] and [3, 4] → [6, 4])."
    )
    inputs = PAIR_IN
    outputs = TENSOR_OUT
    params = (Param("dim", "int", 0, "Position of the new dimension"),)
    python = "torch.stack([{tensor_a}, {tensor_b}], dim={dim})"

    def run(self, ctx, params, tensor_a, tensor_b):
        if tensor_a.shape != tensor_b.shape:
            raise NodeError(f"Shape mismatch: Stack needs two tensors of the same shape, got "
                            f"{shape_str(tensor_a.shape)} and {shape_str(tensor_b.shape)}")
        dim = check_dim(tensor_a, params["dim"], extra=1)
        return {"tensor": torch.stack([tensor_a, tensor_b], dim=dim)}


@register
class Split(LibraryNode):
    type = "Split"
    category = CATEGORY
    description = "Cuts a tensor into 'chunks' nearly equal pieces along one dimension."
    details = (
        "The tensor is cut along 'dim' into 'chunks' pieces, and the node grows one output "
        "per piece: chunk_0, chunk_1, …. A [6, 4] tensor split into 2 chunks along dim 0 "
        "gives two [3, 4] tensors. If the size does not divide evenly, the first pieces get "
        "one extra row: 5 rows in 2 chunks gives 3 and 2. Splitting a layer's output into "
        "query, key and value is a typical use."
    )
    inputs = TENSOR_IN
    outputs = (Port("chunk_0"), Port("chunk_1"))
    params = (
        Param("chunks", "int", 2, "How many pieces (each gets its own output)", min=1, max=32),
        Param("dim", "int", 0, "Dimension to cut along"),
    )

    @classmethod
    def to_python(cls, code, params, tensor):
        names = [code.name(f"chunk_{i}") for i in range(params["chunks"])]
        code.line(f"{', '.join(names)}, = torch.tensor_split({tensor}, {params['chunks']!r}, dim={params['dim']!r})")
        return {f"chunk_{i}": name for i, name in enumerate(names)}

    @classmethod
    def output_ports(cls, params):
        return tuple(Port(f"chunk_{i}") for i in range(param_value(cls, params, "chunks")))

    def run(self, ctx, params, tensor):
        if tensor.dim() == 0:
            raise NodeError("Split needs a tensor with at least one dimension, not a single number")
        dim, chunks = check_dim(tensor, params["dim"]), params["chunks"]
        if tensor.shape[dim] < chunks:
            raise NodeError(f"Cannot split size {tensor.shape[dim]} (dim {dim} of "
                            f"{shape_str(tensor.shape)}) into {chunks} chunks; use chunks of at "
                            f"most {tensor.shape[dim]}")
        pieces = torch.tensor_split(tensor, chunks, dim=dim)
        return {f"chunk_{i}": piece for i, piece in enumerate(pieces)}


@register
class Argmax(LibraryNode):
    type = "Argmax"
    category = CATEGORY
    description = "Finds the position of the largest number along a dimension."
    details = (
        "Instead of the largest value it returns where that value sits, as a whole number "
        "(counting from 0). For a model's scores [2, 10] (2 pictures, 10 classes), Argmax over "
        "dim -1 gives [2]: the predicted class of each picture. When two numbers tie, the "
        "first one wins. Tick 'keepdim' to keep the searched dimension with size 1 ([2, 10] → "
        "[2, 1])."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (
        Param("dim", "int", -1, "Dimension to search along"),
        Param("keepdim", "bool", False, "Keep the searched dimension with size 1"),
    )
    python = "torch.argmax({tensor}, dim={dim}, keepdim={keepdim})"

    def run(self, ctx, params, tensor):
        x = tensor.to(torch.uint8) if tensor.dtype == torch.bool else tensor
        return {"tensor": torch.argmax(x, dim=check_dim(x, params["dim"]), keepdim=params["keepdim"])}


@register
class ScalarMultiply(LibraryNode):
    type = "ScalarMultiply"
    category = CATEGORY
    description = "Multiplies every number of a tensor by the same number."
    details = (
        "Each number is multiplied by 'scalar'; the shape stays the same ([2, 3] → [2, 3]). "
        "2 doubles everything, 0.5 halves it, -1 flips the signs. Attention uses this to "
        "divide scores by √d so they do not grow too large."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (Param("scalar", "float", 1.0, "The number to multiply by"),)
    python = "{tensor} * {scalar}"

    def run(self, ctx, params, tensor):
        return {"tensor": tensor * params["scalar"]}


@register
class Softmax(LibraryNode):
    type = "Softmax"
    category = CATEGORY
    description = "Turns scores into probabilities: positive numbers that add up to 1."
    details = (
        "Along 'dim' (-1 = the last) every number x becomes e^x divided by the sum of all the "
        "e^x values. The result keeps the order of the scores (the largest score gets the "
        "largest probability), every value is between 0 and 1, and each row sums to 1. The "
        "shape does not change: [1, 3] scores such as [0.5, 1.0, 2.0] become [1, 3] "
        "probabilities of about [0.14, 0.23, 0.63]. Turn on Verbose internals to see each "
        "step of the calculation."
    )
    inputs = TENSOR_IN
    outputs = TENSOR_OUT
    params = (Param("dim", "int", -1, "Dimension whose values should sum to 1"),)
    records_steps = True
    python = "torch.softmax({tensor}, dim={dim})"

    @classmethod
    def largest_shape(cls, params, inputs):
        return shape_of(inputs.get("tensor"))   # the result and each verbose step: the input's shape or less

    def run(self, ctx, params, tensor):
        x = as_float(tensor)
        dim = check_dim(x, params["dim"])
        out = torch.softmax(x, dim=dim)
        if ctx.verbose:
            biggest = x.amax(dim=dim, keepdim=True)
            shifted = x - biggest
            exp = shifted.exp()
            partition = exp.sum(dim=dim, keepdim=True)
            step(ctx, "logits", "The input scores $z$ (logits); any real numbers.", logits=x)
            step(ctx, "max_subtract", "Subtract the largest score from every score: $z_i - \\max_j z_j$. The "
                 "largest becomes 0 and the rest negative. The final answer does not change, but "
                 "$e^z$ can no longer overflow.", max=biggest,
                 shifted=shifted)
            step(ctx, "exp", "Exponentiate: $e^{z_i - \\max z}$. Every value is now positive and at most 1; "
                 "bigger scores give bigger numbers.",
                 exp=exp)
            step(ctx, "partition", "Add them up along the dim: $$Z = \\sum_j e^{z_j - \\max z}$$",
                 partition=partition)
            step(ctx, "divide", "Divide each by the total: $$p_i = \\frac{e^{z_i - \\max z}}{Z}$$ so "
                 "every $p_i$ is between 0 and 1 and together they sum to 1.", output=out)
        return {"tensor": out}
