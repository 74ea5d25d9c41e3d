"""The 'edu' lesson pack: Classroom."""
from pathlib import Path

from apps.graphs.nodes.packs import Pack

from .nodes.classifiers import AdvancedClassifier, Classifier
from .nodes.images import SlidingWindow2D
from .nodes.mlp import ActivationLayer, FFNLayer, TrainAndEvaluate
from .nodes.tables import FilterRows
from .nodes.text import SentenceEmbedding

PACK = Pack(
    name="edu",
    title="Classroom",
    version="0.1.0",
    description="First lessons with tables, images and classifiers: filtering rows, sliding a kernel over an image, and training small classifiers.",
    nodes=(FilterRows, SlidingWindow2D, Classifier, AdvancedClassifier, FFNLayer, ActivationLayer,
           TrainAndEvaluate, SentenceEmbedding),
    examples=Path(__file__).parent / "examples",
)
