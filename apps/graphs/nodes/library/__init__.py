"""The built-in node catalogue. Importing a module registers its nodes (see ``base.register``)."""
from . import (attention, cnn, control, data, datasets, embeddings, files, normalization, rnn, script, sequential,
               subgraph, tensor_ops, training, transformer, utility)

__all__ = ["attention", "cnn", "control", "data", "datasets", "embeddings", "files", "normalization", "rnn", "script",
           "sequential", "subgraph", "tensor_ops", "training", "transformer", "utility"]
