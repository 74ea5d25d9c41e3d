"""The policy-gradient (REINFORCE) loss, one step at a time."""
from __future__ import annotations

import torch

from apps.graphs.nodes.base import NodeError, Param, Port
from apps.graphs.nodes.library._helpers import LibraryNode, as_float, need_rank, shape_str, step


class PolicyGradient(LibraryNode):
    type = "rl:Edu-PolicyGradient"
    category = "RL"
    description = "The REINFORCE loss: makes the actions that earned more reward more likely."
    details = (
        "A policy gives each possible action a score (a logit) in each situation. Softmax of "
        "logits / temperature turns the scores into probabilities; the node picks the "
        "probability of the action that was actually taken, takes its log, and weighs it by "
        "how much better than usual that action turned out (its advantage: the reward minus "
        "the batch's mean reward with baseline 'mean', the reward itself with 'none'). The "
        "loss is −mean(log-probability × advantage): going downhill on it raises the "
        "probability of actions with a positive advantage and lowers the others. logits "
        "[B, A], actions [B] (whole numbers 0 … A − 1) and rewards [B] give log_probs [B], "
        "advantages [B], probs [B, A] and one loss number. A high temperature makes the "
        "policy explore; a low one makes it greedy."
    )
    inputs = (Port("logits", description="[batch, actions]"),
              Port("actions", description="The action taken in each item, [batch]"),
              Port("rewards", description="The return of each item, [batch]"))
    outputs = (Port("log_probs"), Port("advantages"), Port("loss"), Port("probs"))
    params = (
        Param("baseline", "select", "mean", "What is subtracted from the rewards",
              options=("none", "mean")),
        Param("temperature", "float", 1.0, "Logits are divided by this before softmax", min=0.01),
    )
    records_steps = True

    def run(self, ctx, params, logits, actions, rewards):
        need_rank(logits, (2,), "Edu-PolicyGradient 'logits'", "[batch, actions]")
        batch, count = logits.shape
        for name, value in (("actions", actions), ("rewards", rewards)):
            if tuple(value.shape) != (batch,):
                raise NodeError(f"Edu-PolicyGradient: '{name}' must have shape [{batch}] (one per "
                                f"row of logits), but has shape {shape_str(value.shape)}")
        if actions.is_floating_point() and not torch.equal(actions, actions.round()):
            raise NodeError("Edu-PolicyGradient: 'actions' must be whole numbers (action indices)")
        actions = actions.long()
        if batch and (int(actions.min()) < 0 or int(actions.max()) >= count):
            raise NodeError(f"Edu-PolicyGradient: 'actions' must lie in 0 … {count - 1} (there are "
                            f"{count} actions), but range from {int(actions.min())} to "
                            f"{int(actions.max())}")
        logits, rewards, temperature = as_float(logits), as_float(rewards), params["temperature"]
        scaled = logits / temperature
        probs = scaled.softmax(dim=-1)
        step(ctx, "softmax", r"Probabilities of the actions: $\pi = \mathrm{softmax}(z / T)$ with "
             f"$T = {temperature:g}$.", {"temperature": temperature, "num_actions": float(count)},
             logits=logits, scaled=scaled, probs=probs)
        taken = probs.gather(1, actions.unsqueeze(1)).squeeze(1)
        step(ctx, "gather", r"The probability $\pi(a_i)$ of the action each item actually took.",
             actions=actions, action_probs=taken)
        log_probs = taken.clamp_min(1e-12).log()
        step(ctx, "log", r"Its logarithm $\log \pi(a_i)$: near 0 for a likely action, very "
             "negative for an unlikely one.", log_probs=log_probs)
        baseline = rewards.mean() if params["baseline"] == "mean" else rewards.new_zeros(())
        advantages = rewards - baseline
        step(ctx, "advantages", r"How much better than usual each action did: "
             r"$A_i = r_i - b$ with baseline $b$ = " + params["baseline"] + ".",
             {"baseline": float(baseline)}, rewards=rewards, advantages=advantages)
        loss = -(log_probs * advantages).mean()
        step(ctx, "loss", r"$L = -\frac{1}{B}\sum_i \log \pi(a_i)\,A_i$: going downhill makes "
             "actions with a positive advantage more likely.", {"loss": float(loss)}, loss=loss)
        return {"log_probs": log_probs, "advantages": advantages, "loss": loss, "probs": probs}
