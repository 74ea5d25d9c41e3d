"""The 'foundations' lesson pack: Foundations."""
from pathlib import Path

from apps.graphs.nodes.packs import Pack

PACK = Pack(
    name="foundations",
    title="Foundations",
    version="0.1.0",
    description="Classical machine learning, step by step: column statistics, k-nearest neighbours, linear and logistic regression, a feed-forward layer and token embeddings.",
    nodes=(),
    examples=Path(__file__).parent / "examples",
)
