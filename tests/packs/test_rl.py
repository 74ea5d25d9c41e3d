"""The Reinforcement learning pack's node against a direct computation."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from apps.graphs.nodes.base import NodeError

from .conftest import run, step, steps

LOGITS = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 0.3], [-0.5, 1.5, 0.0], [1.0, 1.0, 1.0]])
ACTIONS = torch.tensor([0, 2, 1, 2])
REWARDS = torch.tensor([1.0, -0.5, 2.0, 0.0])


@pytest.mark.parametrize("baseline", ["mean", "none"])
def test_policy_gradient_matches_reinforce(ctx, baseline):
    out = run(ctx, "rl:Edu-PolicyGradient", {"baseline": baseline, "temperature": 2.0},
              logits=LOGITS, actions=ACTIONS, rewards=REWARDS)
    z = LOGITS.double().numpy() / 2.0
    probs = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    log_probs = np.log(probs[np.arange(4), ACTIONS.numpy()])
    advantages = REWARDS.numpy() - (REWARDS.numpy().mean() if baseline == "mean" else 0.0)
    assert np.allclose(out["probs"], probs) and np.allclose(out["log_probs"], log_probs)
    assert np.allclose(out["advantages"], advantages)
    assert out["loss"].item() == pytest.approx(-(log_probs * advantages).mean(), abs=1e-6)


def test_policy_gradient_steps(verbose):
    run(verbose, "rl:Edu-PolicyGradient", logits=LOGITS, actions=ACTIONS, rewards=REWARDS)
    assert steps(verbose) == [
        ("softmax", ["logits", "probs", "scaled"], ["num_actions", "temperature"]),
        ("gather", ["action_probs", "actions"], []), ("log", ["log_probs"], []),
        ("advantages", ["advantages", "rewards"], ["baseline"]), ("loss", ["loss"], ["loss"]),
    ]
    assert step(verbose, "advantages")["scalars"] == {"baseline": pytest.approx(0.625)}


def test_policy_gradient_refuses_an_action_out_of_range(ctx):
    with pytest.raises(NodeError, match=r"'actions' must lie in 0 … 2 \(there are 3 actions\)"):
        run(ctx, "rl:Edu-PolicyGradient", logits=LOGITS, actions=torch.tensor([0, 3, 1, 2]),
            rewards=REWARDS)
    with pytest.raises(NodeError, match=r"'rewards' must have shape \[4\]"):
        run(ctx, "rl:Edu-PolicyGradient", logits=LOGITS, actions=ACTIONS, rewards=REWARDS[:2])
