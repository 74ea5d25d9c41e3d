"""SequentialModel: a model built from a layer graph (apps/graphs/layers.py), for Optimizer
and TrainingLoop."""
from __future__ import annotations

from typing import Any

from ... import layers
from ..base import NodeError, Param, ParamError, Port, register
from ..python import NotPlain, literal
from ._helpers import LibraryNode, build_layer

# CodefyUI's default: a small CNN for 28 × 28 grey images with 10 classes.
DEFAULT_LAYERS = layers.dumps(layers.chain_of([
    ("c1", "Conv2d", {"in_channels": 1, "out_channels": 32, "kernel_size": 3, "padding": 1}),
    ("r1", "ReLU", {}),
    ("p1", "MaxPool2d", {"kernel_size": 2, "stride": 2}),
    ("c2", "Conv2d", {"in_channels": 32, "out_channels": 64, "kernel_size": 3, "padding": 1}),
    ("r2", "ReLU", {}),
    ("p2", "MaxPool2d", {"kernel_size": 2, "stride": 2}),
    ("f", "Flatten", {}),
    ("l1", "Linear", {"in_features": 3136, "out_features": 128}),
    ("r3", "ReLU", {}),
    ("l2", "Linear", {"in_features": 128, "out_features": 10}),
]))


def _keywords(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={literal(v)}" for k, v in params.items())


def _pool(kind: str) -> Any:
    return lambda p: f"nn.{kind}(kernel_size={p['kernel_size']!r}, stride={p['stride'] or None!r}, padding={p['padding']!r})"


# A layer of the Layers editor as the script writes it; those not here (Reshape, LSTM, attention,
# …) are CodefyUI's own modules, so a model holding one is built by CodefyUI's engine.
LAYER_CODE = {name: (lambda kind: lambda p: f"nn.{kind}({_keywords(p)})")(name) for name in (
    "Linear", "Conv2d", "Conv1d", "ConvTranspose2d", "BatchNorm2d", "BatchNorm1d", "LayerNorm", "GroupNorm",
    "InstanceNorm2d", "AdaptiveAvgPool2d", "Dropout", "Flatten", "ReLU", "LeakyReLU", "GELU", "SiLU", "Mish",
    "ELU", "SELU", "PReLU", "Sigmoid", "Tanh", "Hardswish", "Softmax")}
LAYER_CODE |= {"MaxPool2d": _pool("MaxPool2d"), "AvgPool2d": _pool("AvgPool2d"),
               "Embedding": lambda p: (f"nn.Embedding({p['num_embeddings']!r}, {p['embedding_dim']!r}, "
                                       f"padding_idx={None if p['padding_idx'] < 0 else p['padding_idx']!r})")}


@register
class SequentialModel(LibraryNode):
    type = "SequentialModel"
    category = "Training"
    description = "Builds a trainable model from a list of layers, for Optimizer and TrainingLoop."
    details = (
        "A model is layers the data flows through one after another: here a Conv2d finds "
        "patterns, ReLU bends, MaxPool2d shrinks, Flatten makes one row per picture and Linear "
        "layers turn that row into one score per class. Edit the layers in Node details "
        "(Layers): add, remove, reorder and set each one; the shape after every layer is shown, "
        "so you can see where sizes stop fitting, e.g. a Linear whose in_features is not the "
        "number of values Flatten makes. Branches that join again (Add, Concat, Multiply, "
        "Subtract, Mean, Stack) make networks such as ResNets. The node outputs the model "
        "itself, with fresh weights (or the kept ones with Persist weights on): connect it "
        "to an Optimizer and a TrainingLoop to train it."
    )
    outputs = (Port("model", "MODEL", description="The model (a torch.nn.Module)"),)
    params = (Param("layers", "layers", DEFAULT_LAYERS, "The model's layer graph (CodefyUI's v2 JSON)"),)
    stateful = True

    @classmethod
    def to_python(cls, code, params):
        spec = layers.parse(params["layers"])
        previous, made = spec.input_id, []
        for step in spec.steps:   # a straight chain of PyTorch's own layers is an nn.Sequential
            if len(step.sources) != 1 or step.sources[0][0] != previous or step.type not in LAYER_CODE:
                raise NotPlain(f"{step.name} is not one of a straight chain of PyTorch layers")
            made.append(LAYER_CODE[step.type](step.params))
            previous = step.id
        if len(spec.inputs) != 1 or [source for _, source in spec.outputs] != [(previous, None)]:
            raise NotPlain("the model has several inputs or outputs")
        code.reseed()
        lines = "".join(f"\n    {layer}," for layer in made)
        return {"model": code.value(f"nn.Sequential({lines}\n)", "model")}

    @classmethod
    def coerce_params(cls, raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The layer graph is checked here already, so the run is refused before it starts."""
        values, problems = super().coerce_params(raw)
        if not problems:
            try:
                layers.parse(values["layers"])
            except ParamError as exc:
                problems.append(str(exc))
        return values, problems

    def run(self, ctx, params):
        try:
            spec = layers.parse(params["layers"])
            counts = layers.weight_counts(spec)
        except ParamError as exc:
            raise NodeError(f"SequentialModel: {exc}") from None
        largest = max(counts, key=counts.get, default=None)
        model = build_layer(ctx, counts.get(largest, 0), f"Layer '{largest}' of SequentialModel",
                            lambda: layers.LayerGraph(spec))
        total = sum(p.numel() for p in model.parameters())
        ctx.log(f"SequentialModel: {len(spec.steps)} layers, {total:,} weights")
        return {"model": model}
