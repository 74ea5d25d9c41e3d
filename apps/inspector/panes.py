"""Node details' panes: small tab classes like the Inspector's own (a slug, a title, a
template and ``context()``), each saying whether a node has it. PANES lists them in the
seed's order; a node's own pane is one more class in it."""
from __future__ import annotations

import re
from typing import Any

from apps.graphs import edits, subgraphs
from apps.runs.models import ScriptNodes

from .layers_pane import has_layers, layers_view
from .panel import TABS, Inspection, InspectorTab, forward_rows
from .stats_pane import stats_rows_for


class DetailsPane(InspectorTab):
    def applies(self, cls, has_run: bool) -> bool:
        """Whether a node of this class (None for a note) has the pane."""
        return True


class Code(DetailsPane):
    """Script nodes only, and the pane they open on: the script, its port counts, and what the
    last run made of it (its prints, its error with the script's line, its outputs)."""
    slug, title, template = "code", "Code", "inspector/_code.html"

    def applies(self, cls, has_run):
        return bool(getattr(cls, "script", False))

    def context(self, ins: Inspection) -> dict[str, Any]:
        node = edits.find_node(ins.doc, ins.node_id)
        cls, params = edits.node_class(node), edits.params_of(node)
        status = ins.run.nodes.get(ins.node_id, {}) if ins.run else {}
        printed = [e["text"] for e in (ins.run.log if ins.run else ())
                   if e.get("node") == ins.node_id and e.get("level") == "info"]  # its log lines, not its status
        error = status.get("error", "") if status.get("status") == "error" else ""
        line = re.search(r"\bline (\d+):", error)
        return {"params": params, "declared": {p.name: p for p in cls.params},
                "lines": range(1, params["code"].count("\n") + 2), "error_line": int(line[1]) if line else None,
                "refusal": ScriptNodes.refusal(), "ran": bool(status),
                "error": error,
                "printed": "\n".join(printed), "rows": forward_rows(ins)[1] if status else []}


class Subgraph(DetailsPane):
    slug, title, template = "subgraph", "Subgraph", "inspector/_subgraph.html"

    def applies(self, cls, has_run):
        return bool(getattr(cls, "subgraph", False))

    def context(self, ins: Inspection) -> dict[str, Any]:
        return {"boundary": subgraphs.definition(edits.find_node(ins.doc, ins.node_id))}


class Layers(DetailsPane):
    """A SequentialModel's layers: the Layers editor."""
    slug, title, template = "layers", "Layers", "inspector/_layers.html"

    def applies(self, cls, has_run):
        return has_layers(cls)

    def context(self, ins):
        return layers_view(ins)


class Inputs(DetailsPane):
    slug, title, template = "inputs", "Inputs", "inspector/_pane_rows.html"

    def context(self, ins):
        return {"rows": forward_rows(ins)[0], "empty": "No inputs connected"}


class Outputs(DetailsPane):
    slug, title, template = "outputs", "Outputs", "inspector/_pane_rows.html"

    def context(self, ins):
        return {"rows": forward_rows(ins)[1], "empty": "This node has no outputs."}


class AfterRun(DetailsPane):
    """One of the Inspector's own tabs (Steps, Backward), shown once there is a run."""

    def __init__(self, tab: InspectorTab):
        self.tab, self.slug, self.title, self.template = tab, tab.slug, tab.title, tab.template

    def applies(self, cls, has_run):
        return has_run

    def context(self, ins):
        return self.tab.context(ins)


class TrainingPane(DetailsPane):
    """The Inspector's Training tab, for a node that trains."""
    slug, title, template = TABS["training"].slug, TABS["training"].title, TABS["training"].template

    def applies(self, cls, has_run):
        return TABS["training"].shows_for(cls)

    def context(self, ins):
        return TABS["training"].context(ins)


class Stats(DetailsPane):
    slug, title, template = "stats", "Stats", "inspector/_stats.html"

    def context(self, ins):
        return {"stats": stats_rows_for(ins)}


class Docs(DetailsPane):
    slug, title, template = "docs", "Docs", "inspector/_docs.html"

    def context(self, ins):
        node = edits.find_node(ins.doc, ins.node_id)
        cls = edits.node_class(node)
        params = edits.params_of(node)
        return {"cls": cls, "inputs": cls.input_ports(params) if cls else [],
                "outputs": cls.output_ports(params) if cls else []}


PANES: tuple[DetailsPane, ...] = (Code(), Subgraph(), Layers(), Inputs(), Outputs(), TrainingPane(), AfterRun(TABS["steps"]),
                                  AfterRun(TABS["backward"]), Stats(), Docs())


def panes_for(cls, has_run: bool) -> list[DetailsPane]:
    return [p for p in PANES if p.applies(cls, has_run)]
