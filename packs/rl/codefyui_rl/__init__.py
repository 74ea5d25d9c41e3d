"""The 'rl' lesson pack: Reinforcement learning."""
from pathlib import Path

from apps.graphs.nodes.packs import Pack

from .nodes.policy import PolicyGradient

PACK = Pack(
    name="rl",
    title="Reinforcement learning",
    version="0.1.0",
    description="Learning from rewards, step by step: the policy-gradient loss.",
    nodes=(PolicyGradient,),
    examples=Path(__file__).parent / "examples",
)
