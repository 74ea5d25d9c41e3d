"""The built-in node catalogue. Importing a module registers its nodes (see ``base.register``)."""
from . import (classical, cnn, control, data, datasets, files, normalization, rnn, script, sequential, subgraph,
               tensor_ops, training, transformer, utility)

__all__ = ["classical", "cnn", "control", "data", "datasets", "files", "normalization", "rnn", "script", "sequential",
           "subgraph", "tensor_ops", "training", "transformer", "utility"]
