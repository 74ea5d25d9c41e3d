"""The 'deep' lesson pack: Deep learning."""
from pathlib import Path

from apps.graphs.nodes.packs import Pack

from .nodes.attention import CrossAttention, MultiHeadAttention, SelfAttention
from .nodes.vision import Patchify, ResBlock

PACK = Pack(
    name="deep",
    title="Deep learning",
    version="0.1.0",
    description="Attention and vision building blocks, step by step: self-attention, multi-head and cross attention, a residual block and patchify.",
    nodes=(SelfAttention, MultiHeadAttention, CrossAttention, ResBlock, Patchify),
    examples=Path(__file__).parent / "examples",
)
