"""A planned graph as a Python script: the plain PyTorch it computes, node by node.

``script(plan, name, seed)`` walks the plan in the order a run executes it (a seeded run goes
one node at a time in plan order, executor._Runner) and asks each node for its translation
(``Node.to_python``, declared beside the node). Every node gets one commented block; a node
that draws random numbers gets the seed the engine gives it (``node_context.node_seed``), so the
script prints the numbers the server's run computes. A node without a translation becomes one
call into CodefyUI's engine (``run_node``), and the block says so.

Nothing a student typed becomes code: labels, names and strings are written as literals
(``nodes.python.literal``) or, in comments, on one line with every unprintable character
replaced; variable names are made from node types (``nodes.python.Names``). No Django here.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from apps.graphs.nodes.base import Node, resolve
from apps.graphs.nodes.library._helpers import manual_seed
from apps.graphs.nodes.python import Names, NodeCode, NotPlain, literal

from .executor import RunOptions
from .node_context import NodeContext, node_seed
from .plan import Plan, PlannedNode

# Names the script's own lines use: no node's variable takes them.
SKLEARN = ("datasets", "model_selection", "neighbors", "linear_model", "tree", "ensemble", "svm", "neural_network")
RESERVED = {"torch", "nn", "F", "np", "math", *SKLEARN, "DataLoader", "TensorDataset", "run_node", "generator",
            "epoch", "inputs", "targets", "loss", "total", "batches", "scores", "was_training",
            "best_loss", "best_epoch", "waited", "best_weights"}
SHOWN_PARAM_CHARS = 60      # a param's value in a block's comment, cut past this
QUIET_KINDS = ("grid", "json", "layers", "code")   # params too long for a comment line


@dataclass
class Script:
    text: str
    plain: int                       # nodes written as plain PyTorch
    total: int                       # nodes the run computes (Start nodes do not count)
    notes: list[str] = field(default_factory=list)   # why its numbers may differ from the server's
    engine_nodes: list[str] = field(default_factory=list)   # ids of the nodes CodefyUI's engine runs

    @property
    def exact(self) -> bool:
        return not self.notes


def script(plan: Plan, name: str, seed: int | None, *, device: str = "cpu", deterministic: bool = False,
           gradients: bool = False, persist_weights: bool = False) -> Script:
    """The plan as a script. ``seed`` is the run's Random seed (None: an unseeded run)."""
    names = Names(RESERVED)
    produced: dict[str, dict[str, str]] = {}
    blocks: list[str] = []
    notes: list[str] = []
    plain = total = 0
    engine_nodes: list[str] = []
    needed: dict[str, set[str]] = {}   # each node's output ports something downstream reads
    for node in plan.nodes.values():
        for src, out in node.inputs.values():
            needed.setdefault(src, set()).add(out)
    for node in plan.nodes.values():
        if node.type == "Start":
            continue
        total += 1
        inputs = {port: produced[src][out] for port, (src, out) in node.inputs.items()
                  if out in produced.get(src, {})}
        this_seed = node_seed(seed, node.id) if seed is not None else None
        code, outputs = _translated(node, inputs, names, this_seed)
        if outputs is not None and not needed.get(node.id, set()) <= set(outputs):
            outputs = None   # an output its translation does not write is wired on: the engine runs it
        if outputs is None:
            code = NodeCode(names, this_seed)
            outputs = _engine_call(code, node, inputs)
            engine_nodes.append(node.id)
            blocks.append(f"# {_heading(node)}\n# No plain PyTorch for this node: CodefyUI's engine runs it.")
        else:
            plain += 1
            blocks.append(f"# {_heading(node)}")
        blocks[-1] += "\n" + "\n".join(code.lines) if code.lines else ""
        notes += [f"{_comment(node.label)}: {n}" for n in code.notes]
        produced[node.id] = outputs
    if seed is None:
        notes.insert(0, "the graph's run has no Random seed (Settings), so random numbers differ each time")
    if device != "cpu":
        notes.append(f"the server's run uses {_comment(device)}; this script computes on the CPU")
    if persist_weights:
        notes.append("Persist weights is on: the server's run may go on from layers an earlier run trained; "
                     "this script starts from fresh ones")
    if gradients:
        notes.append("Capture gradients is on: the server runs one extra backward pass this script leaves out")
    body = "\n\n".join(blocks)
    sklearn = any(re.search(rf"\b{module}\.", body) for module in SKLEARN)
    return Script(_header(name, plain, total, notes, seed, sklearn) + _imports(body, deterministic) + body + "\n",
                  plain, total, notes, engine_nodes)


def _translated(node: PlannedNode, inputs: dict[str, str], names: Names, seed: int | None):
    """(code, outputs) of a node's own translation, or (None, None) where it has none that fits:
    no translation, params it does not cover, or an input port it cannot read."""
    code = NodeCode(names, seed)
    if node.cls.to_python.__func__ is Node.to_python.__func__ and node.cls.python is None:
        return None, None
    try:
        outputs = node.cls.to_python(code, dict(node.params), **inputs)
    except (NotPlain, ValueError, KeyError, TypeError, IndexError):
        return None, None   # the engine runs it, and says what is wrong where the run would
    if outputs is None:
        return None, None
    return code, outputs


def _engine_call(code: NodeCode, node: PlannedNode, inputs: dict[str, str]) -> dict[str, str]:
    params = {k: v for k, v in node.params.items()}
    given = "{" + ", ".join(f"{literal(port)}: {var}" for port, var in inputs.items()) + "}"
    result = code.value(f"run_node({literal(node.type)}, {literal(params)}, {code.seed!r}, {given})", node.type)
    return {port.name: f"{result}[{literal(port.name)}]" for port in node.cls.output_ports(node.params)}


def _heading(node: PlannedNode) -> str:
    """"Softmax (softmax-1): dim=-1": the node's type, its id and its settings, on one line."""
    shown = []
    for param in node.cls.params:
        if param.kind in QUIET_KINDS:
            continue
        value = literal(node.params.get(param.name, param.default))
        shown.append(f"{param.name}={value if len(value) <= SHOWN_PARAM_CHARS else value[:SHOWN_PARAM_CHARS] + '…'}")
    label = "" if node.label in (node.type, node.cls.shown_name()) else f' "{node.label}"'
    return _comment(f"{node.cls.shown_name()}{label} ({node.id})" + (f": {', '.join(shown)}" if shown else ""))


def _comment(text: str) -> str:
    """Text as one comment line can hold it: every line break and unprintable character becomes a space."""
    return "".join(c if c.isprintable() else " " for c in str(text))


def _header(name: str, plain: int, total: int, notes: list[str], seed: int | None, sklearn: bool) -> str:
    kind = "PyTorch or scikit-learn" if sklearn else "PyTorch"
    lines = [f"# {_comment(name or 'Untitled graph')}: the graph as plain PyTorch, written by CodefyUI."]
    if plain == total:
        lines.append(f"# All {total} nodes are plain {kind}." if total > 1 else f"# Its one node is plain {kind}.")
    else:
        lines += [f"# {plain} of the {total} nodes are plain {kind}; the other {total - plain} run with CodefyUI's",
                  "# engine (the run_node lines), so run this script in CodefyUI's folder."]
    if notes:
        lines.append("# NOT THE SAME NUMBERS as CodefyUI's run, because:")
        lines += [f"#   - {note}" for note in notes]
    else:
        lines.append(f"# Same numbers: with seed {seed}, it prints what CodefyUI's run computes.")
    return "\n".join(lines) + "\n\n"


_USES = [  # (what the body uses, the import it needs), in the order a script lists them
    (r"\bmath\.", "import math"),
    (r"\bnp\.", "import numpy as np"),
    (r"\btorch\b", "import torch"),
    (r"\bF\.", "import torch.nn.functional as F"),
    (r"\bnn\.", "from torch import nn"),
    (r"\b(DataLoader|TensorDataset)\(", "from torch.utils.data import DataLoader, TensorDataset"),
    (r"\brun_node\(", "from apps.runs.engine.to_python import run_node  # CodefyUI's engine"),
]


def _imports(body: str, deterministic: bool) -> str:
    lines = [line for pattern, line in _USES if re.search(pattern, body)]
    if used := [name for name in SKLEARN if re.search(rf"\b{name}\.", body)]:
        lines.insert(1 + lines.index("import numpy as np") if "import numpy as np" in lines else 0,
                     f"from sklearn import {', '.join(used)}")
    if "import torch" not in lines:
        lines.insert(0, "import torch")
    if deterministic:
        lines.append("\ntorch.use_deterministic_algorithms(True, warn_only=True)")
    return "\n".join(lines) + "\n\n"


# -- the script's way into CodefyUI's engine ----------------------------------------------

def run_node(type_key: str, params: dict[str, Any], seed: int | None, inputs: dict[str, Any]) -> dict[str, Any]:
    """One node computed by CodefyUI's engine as a run computes it (seeded the same way), for
    the nodes a script cannot write as plain PyTorch; what it logs is printed."""
    cls = resolve(type_key)
    if cls is None:
        raise ValueError(f"CodefyUI has no node {type_key!r}")
    values, problems = cls.coerce_params(params)
    if problems:
        raise ValueError("; ".join(problems))
    node = PlannedNode("script", type_key, type_key, cls, values, {}, frozenset())
    ctx = NodeContext(node, RunOptions(run_id="script", record=False), torch.device("cpu"), lambda event: None)
    ctx.seed = seed
    if seed is not None:
        manual_seed(seed)
        np.random.seed(seed % 2**32)
        random.seed(seed)
    if cls.mutates_inputs:
        inputs = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
    given = {**{p.name: None for p in cls.inputs if p.optional}, **inputs}
    with torch.enable_grad():
        outputs = cls().run(ctx, dict(values), **given)
    for line in ctx.logs:
        print(line)
    return outputs
