"""The built-in node catalogue. Importing a module registers its nodes (see ``base.register``)."""
from . import cnn, control, data, normalization, rnn, script, subgraph, tensor_ops, training, transformer, utility

__all__ = ["cnn", "control", "data", "normalization", "rnn", "script", "subgraph", "tensor_ops", "training",
           "transformer", "utility"]
