"""PythonScript: a student's own Python function as a node (reference §16).

The script defines ``run(inputs, params)``; ``inputs`` holds the wired ports ``in1..inN``
(an unwired one is absent), ``params`` a copy of the node's params. A dict result maps keys
to the ports ``out1..outN`` (other keys are dropped, and the log says so); any other value
becomes ``out1``. What it prints is the node's log entry. The engine runs it through
``ctx.run_script``: in a child process of the run worker, shut in (apps/runs/sandbox.py),
and only on a server where an administrator turned script nodes on.
"""
from __future__ import annotations

from ..base import PORT_COLOURS, NodeError, Param, Port, register
from ._helpers import LibraryNode, param_value

DEFAULT_CODE = '''def run(inputs, params):
    # inputs: the wired ports by name ("in1", "in2", ...); params: this node's settings
    x = inputs.get("in1")
    return {"out1": x}
'''
MAX_PORTS = 8


def _types(text: str, default: str, count: int) -> list[str]:
    """'TENSOR, SCALAR' → one type per port; a short list repeats its last entry, and an
    unknown name (or TRIGGER) falls back to the default."""
    names = [t.strip().upper() for t in str(text).split(",") if t.strip()] or [default]
    names += [names[-1]] * (count - len(names))
    return [n if n in PORT_COLOURS and n != "TRIGGER" else default for n in names[:count]]


@register
class PythonScript(LibraryNode):
    type = "PythonScript"
    category = "Utility"
    description = "Runs your own Python function on its inputs: run(inputs, params) returns the outputs."
    details = (
        "Write a function run(inputs, params) in the Code tab of Node details. 'inputs' holds "
        "what arrives on the ports in1, in2, … (a port with nothing wired is missing from it) and "
        "'params' this node's settings. Return a dict such as {\"out1\": x * 2} to fill the output "
        "ports out1, out2, …; any other value goes to out1. print() output appears in the run log. "
        "torch and numpy (as np) are ready to use. 'input_ports' and 'output_ports' set how many "
        "ports the node has (1 to 8); 'input_types' and 'output_types' give each port's type, "
        "separated by commas. The script runs shut away from the server: no network, no files "
        "but its own scratch folder, and limits on time and memory. Script nodes are off until an "
        "administrator turns them on."
    )
    params = (
        Param("code", "code", DEFAULT_CODE, "The script: it defines run(inputs, params)"),
        Param("input_ports", "int", 1, "How many input ports (in1, in2, …)", min=1, max=MAX_PORTS),
        Param("output_ports", "int", 1, "How many output ports (out1, out2, …)", min=1, max=MAX_PORTS),
        Param("input_types", "string", "TENSOR", "Type of each input port, separated by commas"),
        Param("output_types", "string", "ANY", "Type of each output port, separated by commas"),
    )
    script = True

    @classmethod
    def input_ports(cls, params):
        count = param_value(cls, params, "input_ports")
        types = _types(param_value(cls, params, "input_types"), "TENSOR", count)
        return tuple(Port(f"in{i}", t, optional=True) for i, t in enumerate(types, 1))

    @classmethod
    def output_ports(cls, params):
        count = param_value(cls, params, "output_ports")
        return tuple(Port(f"out{i}", t) for i, t in enumerate(_types(param_value(cls, params, "output_types"), "ANY", count), 1))

    def run(self, ctx, params, **inputs):
        wired = {k: v for k, v in inputs.items() if v is not None}
        result = ctx.run_script(params["code"], wired, dict(params))
        if result.printed:
            ctx.log(result.printed.rstrip("\n"))
        if result.error:
            raise NodeError(f"PythonScript: {result.error}")
        ports = [p.name for p in self.output_ports(params)]
        dropped = sorted(set(result.outputs) - set(ports))
        if dropped:
            ctx.log(f"PythonScript: {', '.join(dropped)} named no output port and {'was' if len(dropped) == 1 else 'were'} dropped")
        return {name: result.outputs.get(name) for name in ports}
