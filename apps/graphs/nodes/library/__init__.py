"""The built-in node catalogue. Importing a module registers its nodes (see ``base.register``)."""
from . import (cnn, control, data, datasets, embeddings, files, normalization, rnn, script, sequential,
               subgraph, tensor_ops, text, training, transformer, utility)

__all__ = ["cnn", "control", "data", "datasets", "embeddings", "files", "normalization", "rnn", "script",
           "sequential", "subgraph", "tensor_ops", "text", "training", "transformer", "utility"]
