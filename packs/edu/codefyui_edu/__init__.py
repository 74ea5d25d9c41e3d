"""The 'edu' lesson pack: Classroom."""
from pathlib import Path

from apps.graphs.nodes.packs import Pack

PACK = Pack(
    name="edu",
    title="Classroom",
    version="0.1.0",
    description="First lessons with tables, images and classifiers: filtering rows, sliding a kernel over an image, and training small classifiers.",
    nodes=(),
    examples=Path(__file__).parent / "examples",
)
