"""What a node's translation into plain PyTorch writes with: ``NodeCode``.

A node declares the code it computes next to its ports and params, either as ``python``, one
expression with the node's inputs and params in braces (``"torch.softmax({tensor}, dim={dim})"``),
or as a classmethod ``to_python(code, params, **inputs)`` that writes lines with ``code`` and
returns the variable each output port is in. Inputs arrive as variable names; params arrive as
their values and are written with ``code.literal`` (``repr``), so nothing a student typed ever
becomes code: a label, a name or a string is data in the script.

The walk over a whole graph (order, seeds, imports, the header) is
``apps/runs/engine/to_python.py``. Nothing here imports Django or torch.
"""
from __future__ import annotations

import keyword
import math
import re
from typing import Any


class NotPlain(Exception):
    """This node's params take it where its translation does not go (say, fp16 training): the
    walk runs it with CodefyUI's engine instead."""


def literal(value: Any) -> str:
    """A JSON-like value as a Python literal: numbers, text, true/false, lists and dicts of them."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(str(k))}: {literal(v)}" for k, v in value.items()) + "}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    return repr(str(value))


def identifier(hint: str) -> str:
    """A variable name made from a hint (a node's type, never a student's text): lower case,
    letters, digits and underscores, never a Python keyword."""
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", hint.split(":")[-1]).strip("_")
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower() or "value"
    if name[0].isdigit():
        name = f"v_{name}"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name) or not name.isidentifier():
        name = f"{name}_"
    return name


class NodeCode:
    """The lines one node adds to the script, and the names and imports they use."""

    def __init__(self, names: "Names", seed: int | None):
        self._names = names
        self.seed = seed                 # CodefyUI's seed for this node in this run, or None
        self.lines: list[str] = []
        self.imports: set[str] = set()
        self.notes: list[str] = []       # why this node's numbers may differ from the server's
        self.prints: list[str] = []      # what its prints say, for the header

    literal = staticmethod(literal)

    def line(self, text: str = "") -> None:
        self.lines.append(text)

    def block(self, text: str) -> None:
        """Several lines at once (dedented by the caller's own layout)."""
        self.lines.extend(text.splitlines())

    def name(self, hint: str) -> str:
        return self._names.fresh(hint)

    def value(self, expression: str, hint: str = "x") -> str:
        """``name = expression``; the new variable's name."""
        name = self.name(hint)
        self.line(f"{name} = {expression}")
        return name

    def reseed(self) -> None:
        """Seed torch's random numbers as the engine does before this node runs."""
        if self.seed is not None:
            self.line(f"torch.manual_seed({self.seed})  # the seed CodefyUI gives this node")

    def generator(self) -> str:
        """A random-number generator seeded as the engine seeds this node's (``ctx.generator()``)."""
        if self.seed is None:
            self.note("a node draws random numbers and the run has no seed")
            return "torch.Generator()"
        return f"torch.Generator().manual_seed({self.seed})"

    def note(self, text: str) -> None:
        self.notes.append(text)

    def fill(self, template: str, params: dict[str, Any], inputs: dict[str, str]) -> str:
        """A declared ``python`` template with its inputs' names and its params as literals."""
        return template.format(**{k: literal(v) for k, v in params.items()}, **inputs)


class Names:
    """Fresh variable names for one script: ``softmax``, ``softmax_2``, …"""

    def __init__(self, taken: set[str] | None = None):
        self._taken = set(taken or ())

    def fresh(self, hint: str) -> str:
        base = identifier(hint)
        name, n = base, 1
        while name in self._taken:
            n += 1
            name = f"{base}_{n}"
        self._taken.add(name)
        return name
