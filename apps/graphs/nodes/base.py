"""The declarative node model: what a node is, before anything runs it.

A node class declares its category, texts, ports and params as class attributes and
implements ``run``. The sidebar, the params form, the Docs tab, validation and the engine
all read the same declaration. Nothing here imports Django.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Protocol

# -- port types -------------------------------------------------------------------------

PORT_COLOURS = {
    "TENSOR": "#4CAF50", "MODEL": "#2196F3", "DATASET": "#FF9800", "DATALOADER": "#9C27B0",
    "OPTIMIZER": "#F44336", "LOSS_FN": "#E91E63", "SCALAR": "#00BCD4", "STRING": "#8BC34A",
    "IMAGE": "#FF5722", "LIST": "#CDDC39", "ANY": "#9E9E9E", "TRIGGER": "#9E9E9E",
}


def types_compatible(source: str, target: str) -> bool:
    """One rule table for the canvas and the validator (reference §2)."""
    source, target = source.upper(), target.upper()
    if "TRIGGER" in (source, target):
        return source == target
    return source == target or "ANY" in (source, target) or (source, target) == ("IMAGE", "TENSOR")


@dataclass(frozen=True)
class Port:
    name: str
    type: str = "TENSOR"
    optional: bool = False
    description: str = ""


# -- params -----------------------------------------------------------------------------

INT_RANGE = (-2**31, 2**31 - 1)   # an int param's values, unless it says otherwise


class ParamError(ValueError):
    """A param value that cannot be used; the message names the param."""


@dataclass(frozen=True)
class Param:
    """One node parameter. ``kind`` is int, float, bool, string, select, grid (a nested list of
    numbers), json (structured data no form edits, such as a block's inside), layers (a model's
    layer graph: JSON text or an object, edited in the Layers editor; its node checks the inside)
    or code (a script, edited in Node details' Code pane)."""

    name: str
    kind: str
    default: Any
    help: str = ""
    min: float | None = None
    max: float | None = None
    options: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How a form names it for a student ("value_mode" reads "Value mode"); the key stays
        the file format's and the Docs tab's."""
        return self.name.replace("_", " ").capitalize()

    @property
    def in_form(self) -> bool:
        """Whether the node's params form edits it (grids, layers and code have editors of their own)."""
        return self.kind not in ("grid", "json", "layers", "code")

    def coerce(self, value: Any) -> Any:
        """Turn a JSON value (possibly a string typed into a form) into this param's type."""
        if value is None or (value == "" and self.kind in ("int", "float")):
            return self.default
        name = self.name
        if self.kind == "int":
            value = _number(value, name, int)
        elif self.kind == "float":
            value = _number(value, name, float)
        elif self.kind == "bool":
            if isinstance(value, str):
                if value.strip().lower() not in ("true", "false", "1", "0", "on", "off", ""):
                    raise ParamError(f"'{name}' must be true or false, not {_shown(value)}")
                value = value.strip().lower() in ("true", "1", "on")
            value = bool(value)
        elif self.kind == "select":
            value = str(value)
            if value not in self.options:
                raise ParamError(f"'{name}' must be one of {', '.join(self.options)}, not {_shown(value)}")
        elif self.kind in ("string", "code"):
            value = value if isinstance(value, str) else str(value)
            if self.kind == "code":  # a form's textarea sends CRLF line ends
                value = value.replace("\r\n", "\n")
        elif self.kind == "grid":
            if not isinstance(value, (list, int, float)):
                raise ParamError(f"'{name}' must be a nested list of numbers")
        elif self.kind == "json":
            if not isinstance(value, dict):
                raise ParamError(f"'{name}' must be an object")
        elif self.kind == "layers":
            if not isinstance(value, (str, dict, list)):
                raise ParamError(f"'{name}' must be a layer graph, not {type(value).__name__}")
        low, high = self.min, self.max
        if self.kind == "int":   # past 32 bits torch's kernels overflow, with messages no student can read
            low, high = (INT_RANGE[0] if low is None else low), (INT_RANGE[1] if high is None else high)
        if low is not None and value < low:
            raise ParamError(f"'{name}' value {value} is below minimum {_fmt(low)}")
        if high is not None and value > high:
            raise ParamError(f"'{name}' value {value} is above maximum {_fmt(high)}")
        return value

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "default": self.default, "help": self.help,
                "min": self.min, "max": self.max, "options": list(self.options)}


def _shown(value: Any) -> str:
    """A refused value as a message quotes it: a pasted wall of text is cut."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}…"


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _number(value: Any, name: str, kind: type) -> Any:
    if isinstance(value, bool):
        raise ParamError(f"'{name}' must be a number, not {_shown(value)}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ParamError(f"'{name}' must be a number, not {_shown(value)}") from None
    if not math.isfinite(number):
        raise ParamError(f"'{name}' must be a finite number, not {_shown(value)}")
    if kind is int:
        if not number.is_integer():
            raise ParamError(f"'{name}' must be a whole number, not {_shown(value)}")
        return int(number)
    return number


def parse_int_list(text: Any, name: str) -> list[int]:
    """'1, 4,4' -> [1, 4, 4]; the message says which param is wrong and why."""
    if isinstance(text, (list, tuple)):
        items = list(text)
    else:
        items = [p for p in str(text).replace(" ", "").split(",") if p != ""]
    try:
        numbers = [int(p) for p in items]
    except (TypeError, ValueError):
        raise ParamError(f"'{name}' must be whole numbers separated by commas, not {text!r}") from None
    if not numbers:
        raise ParamError(f"'{name}' must list at least one number")
    return numbers


# -- what a running node can ask of the engine -----------------------------------------

class NodeError(Exception):
    """A failure a student can read: what went wrong and, where possible, how to fix it."""


class RunContext(Protocol):
    node_id: str
    device: Any            # the torch.device this run uses
    seed: int | None       # this node's seed, derived from the run seed, or None (unseeded)
    verbose: bool          # Verbose internals: record __steps__
    gradients: bool        # Capture gradients: the engine runs one backward pass after the forward pass

    def generator(self) -> Any: ...                       # a torch.Generator on CPU, seeded when the run is
    def check_size(self, elements: int, what: str) -> None: ...  # refuse a layer whose weights together are too many
    def log(self, text: str) -> None: ...                 # a line in the run log (Print output)
    def step(self, name: str, description: str = "", tensors: dict | None = None,
             scalars: dict | None = None) -> None: ...    # one row of the __steps__ trace
    def module(self, build: Callable[[], Any]) -> Any: ...  # this node's layer, on the run's device
    # The student's own files (My files): a file to read, and a whole file written (no half
    # file, within the quota); a name that leaves them is refused with a message naming ``param``.
    def user_file(self, name: str, param: str = "path") -> Any: ...      # a pathlib.Path
    def save_user_file(self, name: str, data: bytes, param: str = "path") -> str: ...  # the name saved
    def list_user_files(self) -> list[str]: ...          # the names of My files (it has no folders)
    def cancelled(self) -> bool: ...                      # Stop or the run's deadline came: end within a batch
    def progress(self, **data: Any) -> None: ...          # the node's progress so far (sent at most 4 times a second)
    recording: bool        # Record node outputs is on: extra captures are kept
    def capture(self, port: str, value: Any) -> None: ... # an extra capture ("__epoch3"), kept while recording
    def unguarded(self) -> Any: ...                       # a block whose ops skip the element-limit guard:
                                                          # a repeated step it already passed at a size as large
    def run_script(self, code: str, inputs: dict, params: dict) -> Any: ...  # a script node's code, shut in:
                                                          # .outputs, .printed, .error (apps/runs/sandbox.py)


SCRIPTS_OFF = ("Script nodes are off on this server; an administrator can turn them on "
               "(CODEFYUI_SCRIPT_NODES=1, or Script nodes in the admin).")

# -- nodes ------------------------------------------------------------------------------

class Node(ABC):
    """Base of every node. Subclasses set the class attributes and implement ``run``."""

    type: ClassVar[str]
    category: ClassVar[str]
    description: ClassVar[str] = ""
    details: ClassVar[str] = ""
    inputs: ClassVar[tuple[Port, ...]] = ()
    outputs: ClassVar[tuple[Port, ...]] = ()
    params: ClassVar[tuple[Param, ...]] = ()
    cacheable: ClassVar[bool] = True      # same inputs and params give the same outputs
    uses_rng: ClassVar[bool] = False      # draws random numbers: cacheable only in seeded runs
    stateful: ClassVar[bool] = False      # owns weights: never served from cache
    records_steps: ClassVar[bool] = False # emits a __steps__ trace with Verbose internals on
    mutates_inputs: ClassVar[bool] = False  # writes into its input tensors: the engine passes copies
    subgraph: ClassVar[bool] = False      # a block of nodes: the engine runs its inside instead
    reports_training: ClassVar[bool] = False  # trains a model and reports its progress: the Training pane
    reports_progress: ClassVar[bool] = False  # a long loop reporting step/of or item/items: its card's bar
    script: ClassVar[bool] = False        # runs a student's code: only where script nodes are on
    python: ClassVar[str | None] = None   # the node as one PyTorch expression ("torch.softmax({tensor}, dim={dim})")

    @abstractmethod
    def run(self, ctx: RunContext, params: dict[str, Any], **inputs: Any) -> dict[str, Any]:
        """Compute this node's outputs, keyed by output port name, from its inputs."""

    @classmethod
    def to_python(cls, code: Any, params: dict[str, Any], **inputs: str) -> dict[str, str] | None:
        """The plain PyTorch this node computes, written with ``code`` (``nodes/python.NodeCode``;
        inputs are variable names): the variable each output port is in, or None where the node
        has no translation (the script then runs it with CodefyUI's engine). The default reads
        ``python``; a node whose code is more than one expression overrides this."""
        if cls.python is None:
            return None
        return {cls.outputs[0].name: code.value(code.fill(cls.python, params, inputs), cls.type)}

    @classmethod
    def shown_name(cls) -> str:
        """Its type as the sidebar and cards show it: without a pack's namespace ("edu:KNN" reads
        "KNN"; the pack is the sidebar category it sits in)."""
        return cls.type.split(":", 1)[-1]

    # The hooks below have sensible defaults; a node overrides them only when its ports
    # depend on its params (Split) or its params need checks across fields.

    @classmethod
    def draws_random(cls, params: dict[str, Any]) -> bool:
        """Whether these params make the node draw random numbers (then it is cached only
        in seeded runs). Nodes random in only some modes narrow this down."""
        return cls.uses_rng

    @classmethod
    def largest_shape(cls, params: dict[str, Any], inputs: dict[str, Any]) -> tuple[int, ...] | None:
        """The shape of the largest tensor the node will make from these inputs, where it can
        tell before running (None: it cannot). The engine then checks that one shape against
        the element limit instead of every operation the node makes (~10-40 µs each, more
        than a small node's own work); a node that tells must make nothing larger."""
        return None

    @classmethod
    def output_ports(cls, params: dict[str, Any]) -> tuple[Port, ...]:
        return cls.outputs

    @classmethod
    def input_ports(cls, params: dict[str, Any]) -> tuple[Port, ...]:
        return cls.inputs

    @classmethod
    def input_port(cls, name: str, params: dict[str, Any] | None = None) -> Port | None:
        return next((p for p in cls.input_ports(params or {}) if p.name == name), None)

    @classmethod
    def coerce_params(cls, raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """Declared params from a document's ``data.params``: (values, problems)."""
        values, problems = {}, []
        for param in cls.params:
            try:
                values[param.name] = param.coerce(raw.get(param.name))
            except ParamError as exc:
                values[param.name] = param.default
                problems.append(str(exc))
        return values, problems

    @classmethod
    def describe(cls) -> dict[str, Any]:
        return {
            "type": cls.type, "category": cls.category, "description": cls.description,
            "details": cls.details,
            "inputs": [{"name": p.name, "type": p.type, "optional": p.optional} for p in cls.inputs],
            "outputs": [{"name": p.name, "type": p.type} for p in cls.outputs],
            "params": [p.describe() for p in cls.params],
            "cacheable": cls.cacheable and not cls.stateful,
        }


_REGISTRY: dict[str, type[Node]] = {}


def register(cls: type[Node]) -> type[Node]:
    """Class decorator: make a node available under its type key."""
    if cls.type in _REGISTRY:
        raise ValueError(f"node type {cls.type!r} is registered twice")
    _REGISTRY[cls.type] = cls
    return cls


_LOADED = False


def registry() -> dict[str, type[Node]]:
    """Every node: the built-in library, then the nodes of every installed pack (loaded on
    the first call; a run's planning asks a dozen times, so later calls do no import)."""
    global _LOADED
    if _LOADED:
        return _REGISTRY
    from . import library  # noqa: F401  (importing the library registers every node)
    if not _LOADED:   # not done meanwhile, by a library module that asked while being imported
        _LOADED = True
        from .packs import installed
        for pack in installed().values():
            for cls in pack.nodes:
                if cls.type not in _REGISTRY:
                    register(cls)
    return _REGISTRY


def resolve(type_key: str) -> type[Node] | None:
    """A type key to its class; a bare name finds a unique namespaced plugin node."""
    nodes = registry()
    if type_key in nodes:
        return nodes[type_key]
    matches = sorted(k for k in nodes if k.split(":", 1)[-1] == type_key and ":" in k)
    return nodes[matches[0]] if matches else None


CATEGORY_ORDER = ("Control", "Data", "EDU", "Classical", "IO", "CNN", "Normalization", "RNN",
                  "Transformer", "LLM", "Diffusion", "RL", "Training", "Data Flow",
                  "Tensor Operations", "Utility")

CATEGORY_COLOURS = {
    "Control": "#9E9E9E", "Data": "#00BCD4", "EDU": "#84CC16", "Classical": "#F59E0B", "IO": "#795548",
    "CNN": "#4CAF50", "Normalization": "#26A69A", "RNN": "#2196F3", "Transformer": "#9C27B0",
    "LLM": "#A78BFA", "Diffusion": "#EC4899", "RL": "#FF9800", "Training": "#F44336", "Data Flow": "#0EA5E9",
    "Tensor Operations": "#5C6BC0", "Utility": "#607D8B",
}


def category_colour(category: str) -> str:
    """A category's colour on cards, in the sidebar and in the node panel (grey when unknown)."""
    return CATEGORY_COLOURS.get(category, CATEGORY_COLOURS["Utility"])
