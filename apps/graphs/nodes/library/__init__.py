"""The built-in node catalogue. Importing a module registers its nodes (see ``base.register``)."""
from . import (cnn, control, data, datasets, files, io_nodes, normalization, rl, rnn, script, sequential, subgraph,
               tensor_ops, training, transformer, utility)

__all__ = ["cnn", "control", "data", "datasets", "files", "io_nodes", "normalization", "rl", "rnn", "script", "sequential",
           "subgraph", "tensor_ops", "training", "transformer", "utility"]
