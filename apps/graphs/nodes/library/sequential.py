"""SequentialModel: a model built from a layer graph (apps/graphs/layers.py), for Optimizer
and TrainingLoop."""
from __future__ import annotations

from typing import Any

from ... import layers
from ..base import NodeError, Param, ParamError, Port, register
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
                            lambda: layers.build(spec))
        total = sum(p.numel() for p in model.parameters())
        ctx.log(f"SequentialModel: {len(spec.steps)} layers, {total:,} weights")
        return {"model": model}
