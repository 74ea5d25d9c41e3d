"""The 'foundations' lesson pack: Foundations."""
from pathlib import Path

from apps.graphs.nodes.packs import Pack

from . import formulas
from .nodes.classical import KNN, LinearRegression, LogisticRegression
from .nodes.language import FFN, TokenEmbedding
from .nodes.statistics import ColumnStats

PACK = Pack(
    name="foundations",
    title="Foundations",
    version="0.1.0",
    description="Classical machine learning, step by step: column statistics, k-nearest neighbours, linear and logistic regression, a feed-forward layer and token embeddings.",
    nodes=(ColumnStats, KNN, LinearRegression, LogisticRegression, FFN, TokenEmbedding),
    examples=Path(__file__).parent / "examples",
    panel="foundations/formula_sheet.html",  # a plugin: the formula sheet docks in the Inspector's column
    panel_context=formulas.panel_context,
)
