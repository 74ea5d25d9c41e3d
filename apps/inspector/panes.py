"""Node details' panes: small tab classes like the Inspector's own (a slug, a title, a
template and ``context()``), each saying whether a node has it. PANES lists them in the
seed's order; a pane to come (Code) is one more class in it."""
from __future__ import annotations

from typing import Any

from apps.graphs import edits, subgraphs

from .layers_pane import has_layers, layers_view
from .panel import TABS, Inspection, InspectorTab, forward_rows
from .stats_pane import stats_rows_for


class DetailsPane(InspectorTab):
    def applies(self, cls, has_run: bool) -> bool:
        """Whether a node of this class (None for a note) has the pane."""
        return True


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
        return {"cls": cls, "outputs": cls.output_ports(edits.params_of(node)) if cls else []}


PANES: tuple[DetailsPane, ...] = (Subgraph(), Layers(), Inputs(), Outputs(), TrainingPane(), AfterRun(TABS["steps"]),
                                  AfterRun(TABS["backward"]), Stats(), Docs())


def panes_for(cls, has_run: bool) -> list[DetailsPane]:
    return [p for p in PANES if p.applies(cls, has_run)]
