"""The built-in node catalogue. Importing a module registers its nodes (see ``base.register``)."""
from . import (attention, classical, classical_code, cnn, control, data, dataflow, datasets, diffusion, embeddings,
               files, graph_io, io_nodes, llm_chat, moe, normalization, plots, rl, rnn, script,
               sequential, subgraph, tables, tensor_ops, text, training, transformer, utility)

__all__ = ["attention", "classical", "classical_code", "cnn", "control", "data", "dataflow", "datasets", "diffusion",
           "embeddings", "files", "graph_io", "io_nodes", "llm_chat", "moe", "normalization",
           "plots", "rl", "rnn", "script", "sequential", "subgraph", "tables", "tensor_ops", "text",
           "training", "transformer", "utility"]
