"""Recurrent layers: read a sequence one step at a time, carrying a memory (the hidden state)."""
from __future__ import annotations

import math

import torch
from torch import nn

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode, build_layer, need_rank, seed_value, shape_str, to_layer_dtype

CATEGORY = "RNN"


def _last_size(x, expected: int, param: str, node: str) -> None:
    if x.shape[-1] != expected:
        raise NodeError(f"Size mismatch: {node} expects the input's last size to be "
                        f"{param}={expected}, but the input has shape {shape_str(x.shape)}; set "
                        f"{param} to {x.shape[-1]}")


@register
class RNNCell(LibraryNode):
    type = "RNNCell"
    category = CATEGORY
    description = "One step of a simple recurrent network: new memory from the input and the old memory."
    details = (
        "The cell computes h' = tanh(x·W_ihᵀ + h·W_hhᵀ + b): it mixes the current input x "
        "with the previous hidden state h (its memory) and squashes the result. Chain several "
        "cells, feeding each one's hidden into the next, to read a sequence. The input is "
        "[batch, input_size] and hidden is [batch, hidden_size]: with the defaults, [1, 8] "
        "gives a hidden of [1, 16]. Leave hidden unwired to start from a memory of zeros. "
        "'nonlinearity' picks tanh or relu, and 'seed' fixes the starting weights."
    )
    inputs = (Port("tensor"), Port("hidden", optional=True))
    outputs = (Port("hidden"),)
    params = (
        Param("input_size", "int", 8, "Size of each input vector", min=1),
        Param("hidden_size", "int", 16, "Size of the memory vector", min=1),
        Param("nonlinearity", "select", "tanh", "Squashing function", options=("tanh", "relu")),
        Param("seed", "int", 42, "Seed for the starting weights"),
    )
    stateful = True

    def run(self, ctx, params, tensor, hidden=None):
        n_in, n_hidden = params["input_size"], params["hidden_size"]
        need_rank(tensor, (1, 2), "RNNCell", "[batch, input_size] (or [input_size])")
        _last_size(tensor, n_in, "input_size", "RNNCell")
        if hidden is not None:
            expected = list(tensor.shape[:-1]) + [n_hidden]
            if list(hidden.shape) != expected:
                raise NodeError(f"Size mismatch: hidden should have shape {shape_str(expected)} "
                                f"for this input, but has {shape_str(hidden.shape)}")
        cell = build_layer(ctx, n_hidden * (n_in + n_hidden + 2), "RNNCell weights",
                           lambda: _seeded_cell(n_in, n_hidden, params["nonlinearity"], params["seed"]))
        h = None if hidden is None else to_layer_dtype(hidden, cell)
        return {"hidden": cell(to_layer_dtype(tensor, cell), h)}


def _seeded_cell(n_in: int, n_hidden: int, nonlinearity: str, seed: int) -> nn.RNNCell:
    """The cell CodefyUI starts from, so a worksheet's numbers match: each weight matrix drawn
    from the standard normal distribution (a generator seeded with 'seed', in the module's
    parameter order) times 1/√hidden_size, and every bias zero."""
    cell = nn.RNNCell(n_in, n_hidden, nonlinearity=nonlinearity)
    gen = torch.Generator().manual_seed(seed_value(seed))
    with torch.no_grad():
        for p in cell.parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(n_hidden))
            else:
                p.zero_()
    return cell


class _Recurrent(LibraryNode):
    """LSTM and GRU: same params and ports; only the module and its gate count differ."""

    inputs = (Port("tensor"),)
    outputs = (Port("output"), Port("hidden"))
    params = (
        Param("input_size", "int", 128, "Size of each step's input vector", min=1),
        Param("hidden_size", "int", 256, "Size of the memory vector", min=1),
        Param("num_layers", "int", 1, "Layers stacked on top of each other", min=1),
        Param("batch_first", "bool", True, "Input is [batch, seq, feature] (else [seq, batch, feature])"),
        Param("bidirectional", "bool", False, "Also read the sequence backwards"),
    )
    stateful = True
    gates = 4
    module = nn.LSTM

    @classmethod
    def to_python(cls, code, params, tensor):
        code.reseed()
        layer = code.value(f"nn.{cls.module.__name__}({params['input_size']!r}, {params['hidden_size']!r}, "
                           f"num_layers={params['num_layers']!r}, batch_first={params['batch_first']!r}, "
                           f"bidirectional={params['bidirectional']!r})", f"{cls.type}_layer")
        output, state = code.name("output"), code.name("state")
        code.line(f"{output}, {state} = {layer}({tensor})")
        hidden = f"{state}[0]" if cls.module is nn.LSTM else state   # an LSTM's state is (h_n, c_n)
        return {"output": output, "hidden": code.value(hidden, "hidden")}

    def run(self, ctx, params, tensor):
        n_in, n_hidden, layers = params["input_size"], params["hidden_size"], params["num_layers"]
        directions = 2 if params["bidirectional"] else 1
        layout = ("[batch, seq, input_size]" if params["batch_first"]
                  else "[seq, batch, input_size]") + " (or [seq, input_size])"
        need_rank(tensor, (2, 3), self.type, layout)
        _last_size(tensor, n_in, "input_size", self.type)
        # the first layer reads the input, each later one the layer below (both directions' outputs)
        per_gate = (n_in + n_hidden + 2) + (layers - 1) * (n_hidden * directions + n_hidden + 2)
        weights = self.gates * n_hidden * per_gate * directions
        layer = build_layer(ctx, weights, f"{self.type} weights", lambda: self.module(
            n_in, n_hidden, num_layers=layers, batch_first=params["batch_first"],
            bidirectional=params["bidirectional"]))
        output, state = layer(to_layer_dtype(tensor, layer))
        hidden = state[0] if isinstance(state, tuple) else state  # LSTM also returns c_n
        return {"output": output, "hidden": hidden}


@register
class LSTM(_Recurrent):
    type = "LSTM"
    category = CATEGORY
    description = "A recurrent layer with gates that decide what to remember and forget along a sequence."
    details = (
        "An LSTM reads a sequence step by step. Besides its hidden state it keeps a cell "
        "state, a long-term memory, and learned gates decide at each step what to forget, "
        "what to store and what to show. With batch_first on, the input is [batch, seq, "
        "input_size]: [4, 10, 128] gives 'output' [4, 10, 256] (the hidden state after every "
        "step) and 'hidden' [1, 4, 256] (the final hidden state of each layer; the cell state "
        "is not output). 'num_layers' stacks LSTMs; 'bidirectional' adds a backward reader "
        "and doubles the output's last size."
    )
    gates, module = 4, nn.LSTM


@register
class GRU(_Recurrent):
    type = "GRU"
    category = CATEGORY
    description = "A gated recurrent layer: a simpler, faster cousin of the LSTM."
    details = (
        "A GRU reads a sequence step by step and keeps one memory vector, updated through "
        "two gates: the reset gate decides how much old memory to use, the update gate how "
        "much to replace. With batch_first on, [4, 10, 128] gives 'output' [4, 10, 256] (the "
        "memory after every step) and 'hidden' [1, 4, 256] (the final memory of each layer). "
        "'num_layers' stacks GRUs; 'bidirectional' adds a backward reader and doubles the "
        "output's last size."
    )
    gates, module = 3, nn.GRU
