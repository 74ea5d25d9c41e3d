"""Reinforcement learning: an environment to act in, the networks that choose actions, and the
two RLHF pieces (a reward head and the KL term).

EnvWrapper makes one of gymnasium's classic-control environments (pure Python and numpy, no
rendering, nothing to download). Atari and MuJoCo environments need emulators and physics
engines this server does not have; they are refused by name with the list of what is here.
The environment travels between nodes as an ``Environment``: a gymnasium wrapper that steps
with a tensor action as well as a number, says in words what it is, and pickles (a capture
crosses from a run worker to the server that way).
"""
from __future__ import annotations

import re
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode, build_layer, need_rank, seed_value, shape_str, step, to_layer_dtype

CATEGORY = "RL"

CLASSIC_CONTROL = ("CartPole-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1", "Pendulum-v1")
ATARI = ("Adventure", "AirRaid", "Alien", "Amidar", "Assault", "Asterix", "Asteroids", "Atlantis", "BankHeist",
         "BattleZone", "BeamRider", "Berzerk", "Bowling", "Boxing", "Breakout", "Carnival", "Centipede",
         "ChopperCommand", "CrazyClimber", "Defender", "DemonAttack", "DoubleDunk", "ElevatorAction", "Enduro",
         "FishingDerby", "Freeway", "Frostbite", "Gopher", "Gravitar", "Hero", "IceHockey", "Jamesbond",
         "JourneyEscape", "Kangaroo", "Krull", "KungFuMaster", "MontezumaRevenge", "MsPacman", "NameThisGame",
         "Phoenix", "Pitfall", "Pong", "Pooyan", "PrivateEye", "Qbert", "Riverraid", "RoadRunner", "Robotank",
         "Seaquest", "Skiing", "Solaris", "SpaceInvaders", "StarGunner", "Tennis", "TimePilot", "Tutankham",
         "UpNDown", "Venture", "VideoPinball", "WizardOfWor", "YarsRevenge", "Zaxxon")
MUJOCO = ("HalfCheetah", "Hopper", "Walker2d", "Ant", "Humanoid", "HumanoidStandup", "Reacher", "Swimmer",
          "InvertedPendulum", "InvertedDoublePendulum", "Pusher")
BOX2D = ("LunarLander", "LunarLanderContinuous", "BipedalWalker", "BipedalWalkerHardcore", "CarRacing")


def _available() -> str:
    return "the environments here are " + ", ".join(CLASSIC_CONTROL)


def family(name: str) -> str | None:
    """'atari', 'mujoco', 'box2d' for an environment of those kinds (by its name), else None."""
    base = re.sub(r"-v\d+$", "", name.strip())
    if base.lower().startswith("ale/") or "noframeskip" in base.lower() or base.lower().endswith("-ram"):
        return "atari"
    base = re.sub(r"(NoFrameskip|Deterministic|-ram)$", "", base.split("/")[-1])
    lower = base.lower()
    if any(lower == game.lower() for game in ATARI):
        return "atari"
    if any(lower == body.lower() for body in MUJOCO):
        return "mujoco"
    if any(lower == world.lower() for world in BOX2D):
        return "box2d"
    return None


def check_env_name(name: str) -> str:
    """The name itself when it is one of ours, else a NodeError saying why and what is here."""
    name = name.strip()
    if name in CLASSIC_CONTROL:
        return name
    kind = family(name)
    if kind == "atari":
        why = (f"'{name}' is an Atari game: it needs the Arcade Learning Environment (ale-py) and the game's "
               "ROM, which this server does not have (it runs only gymnasium's classic-control environments)")
    elif kind == "mujoco":
        why = (f"'{name}' is a MuJoCo robot: it needs the MuJoCo physics engine, which this server does not "
               "have (it runs only gymnasium's classic-control environments)")
    elif kind == "box2d":
        why = (f"'{name}' needs the Box2D physics engine, which this server does not have (it runs only "
               "gymnasium's classic-control environments)")
    else:
        why = f"'{name}' is not an environment this server knows (it runs gymnasium's classic-control ones)"
    raise NodeError(f"EnvWrapper: {why}; {_available()}. Choose one of those in env_name; CartPole-v1 is "
                    "the classic first one")


def _space(space: Any) -> str:
    import gymnasium

    if isinstance(space, gymnasium.spaces.Discrete):
        return f"{int(space.n)} choices (0 … {int(space.n) - 1})"
    if isinstance(space, gymnasium.spaces.Box):
        low, high = float(space.low.min()), float(space.high.max())
        bounded = f" from {low:g} to {high:g}" if abs(low) != float("inf") and abs(high) != float("inf") else ""
        return f"{shape_str(space.shape)} numbers{bounded}"
    return str(space)


class Environment:
    """One classic-control environment as nodes pass it on: ``step`` takes an int, a float, a
    numpy array or a tensor; ``reset``, ``action_space``, ``observation_space`` and ``close``
    are gymnasium's. It pickles as its gymnasium environment does (pure Python and numpy)."""

    def __init__(self, env: Any, name: str, seed: int):
        self.env, self.name, self.seed, self.steps = env, name, seed, 0

    @property
    def action_space(self) -> Any:
        return self.env.action_space

    @property
    def observation_space(self) -> Any:
        return self.env.observation_space

    @property
    def unwrapped(self) -> Any:
        return self.env.unwrapped

    def step(self, action: Any) -> tuple:
        import gymnasium
        import numpy

        if isinstance(action, torch.Tensor):
            action = action.detach().cpu().numpy()
        space = self.action_space
        if isinstance(space, gymnasium.spaces.Discrete):
            array = numpy.asarray(action).reshape(-1)
            if array.size != 1 or not space.contains(int(array[0])):
                raise NodeError(f"{self.name} takes one action number from 0 to {int(space.n) - 1} per step, "
                                f"not {action!r}")
            action = int(array[0])
        else:
            action = numpy.asarray(action, dtype=space.dtype)
            if action.size != numpy.prod(space.shape):
                raise NodeError(f"{self.name} takes {shape_str(space.shape)} numbers per step, not {action.size}")
            action = action.reshape(space.shape)
        self.steps += 1
        return self.env.step(action)

    def reset(self, **kwargs: Any) -> tuple:
        self.steps = 0
        return self.env.reset(**kwargs)

    def close(self) -> None:
        self.env.close()

    def __repr__(self) -> str:
        return (f"{self.name} environment (gymnasium classic control; reset with seed {self.seed}; "
                f"observation: {_space(self.observation_space)}; actions: {_space(self.action_space)}; "
                f"{self.steps} steps taken)")

    __str__ = __repr__


def make_env(name: str, seed: int) -> tuple[Environment, torch.Tensor]:
    """The environment, reset with ``seed``, and its first observation as a float32 tensor."""
    import gymnasium

    name = check_env_name(name)
    env = Environment(gymnasium.make(name), name, seed)
    observation, _info = env.reset(seed=seed)
    return env, torch.as_tensor(observation, dtype=torch.float32)


@register
class EnvWrapper(LibraryNode):
    type = "EnvWrapper"
    category = CATEGORY
    description = "Makes a reinforcement-learning environment and gives its first observation."
    details = (
        "An environment is a little world an agent acts in: at each step the agent sees an "
        "observation (numbers describing the situation), picks an action, and the environment "
        "answers with a reward and the next observation. CartPole-v1: keep a pole upright on a "
        "cart (observation: cart position, cart speed, pole angle, pole speed; actions: push left "
        "0 or right 1; +1 reward per step it stays up). MountainCar-v0 / MountainCarContinuous-v0: "
        "rock a car up a hill. Acrobot-v1: swing a two-link arm up. Pendulum-v1: keep a pendulum "
        "upright with a torque. The environment is reset with the run's seed, so a seeded run "
        "starts from the same observation every time. Only gymnasium's classic-control "
        "environments are on this server: Atari games and MuJoCo robots need software it does "
        "not have."
    )
    outputs = (Port("env", "ANY", description="The environment, to step"),
               Port("observation", description="The first observation, after reset"))
    params = (
        Param("env_name", "string", "CartPole-v1",
              "The environment's gymnasium id: " + ", ".join(CLASSIC_CONTROL)),
    )
    cacheable = False   # the environment changes as it is stepped: every run gets its own
    uses_rng = True

    def run(self, ctx, params):
        seed = ctx.seed if ctx.seed is not None else ctx.generator().initial_seed()
        env, observation = make_env(params["env_name"], seed_value(seed) % 2**63)
        return {"env": env, "observation": observation}


# -- the networks -----------------------------------------------------------------------------

def _state(node: str, state: torch.Tensor, state_dim: int) -> torch.Tensor:
    if state.dim() == 0 or state.shape[-1] != state_dim:
        got = state.shape[-1] if state.dim() else "none"
        raise NodeError(f"{node}: 'state' has shape {shape_str(state.shape)} (last size {got}) but state_dim is "
                        f"{state_dim}; set state_dim to {got}, the number of values in one observation")
    return state


def dqn_network(state_dim: int, action_dim: int, hidden_dim: int) -> nn.Module:
    """CodefyUI's Q-network: two hidden ReLU layers, one Q-value per action."""
    return nn.Sequential(nn.Linear(state_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, hidden_dim), nn.ReLU(),
                         nn.Linear(hidden_dim, action_dim))


class ActorCritic(nn.Module):
    """CodefyUI's PPO network: a shared tanh body, an actor head (action probabilities) and a
    critic head (the state's value)."""

    def __init__(self, state_dim: int, action_dim: int, hidden_dim: int):
        super().__init__()
        self.shared = nn.Sequential(nn.Linear(state_dim, hidden_dim), nn.Tanh(), nn.Linear(hidden_dim, hidden_dim),
                                    nn.Tanh())
        self.actor = nn.Linear(hidden_dim, action_dim)
        self.critic = nn.Linear(hidden_dim, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.shared(x)
        return torch.softmax(self.actor(features), dim=-1), self.critic(features)


NETWORK_PARAMS = (
    Param("state_dim", "int", 4, "How many numbers one observation has (CartPole-v1: 4)", min=1),
    Param("action_dim", "int", 2, "How many actions the agent can choose from (CartPole-v1: 2)", min=1),
)


class _PolicyNetwork(LibraryNode):
    """DQN and PPO: a state in, the network and what it makes of the state out. Each says its
    network, that network's weight count, and the steps that explain its answer."""

    inputs = (Port("state", optional=True, description="An observation [state_dim] or a batch [B, state_dim]"),)
    stateful = True
    records_steps = True

    def run(self, ctx, params, state=None):
        s, a, h = params["state_dim"], params["action_dim"], params["hidden_dim"]
        if state is not None:
            _state(self.type, state, s)
        model = build_layer(ctx, self.weights(s, a, h), f"{self.type} weights", lambda: self.network(s, a, h))
        if state is None:
            return {"model": model, "action": torch.zeros(a, device=ctx.device)}
        x = to_layer_dtype(state, model)
        with torch.no_grad():
            answer = model(x)
        step(ctx, "state", f"The state $s$, shape {shape_str(x.shape)}.", state=x)
        return {"model": model, "action": self.explain(ctx, answer)}

    @staticmethod
    def weights(s: int, a: int, h: int) -> int:
        """The two hidden layers and the action head (a subclass adds its other heads)."""
        return s * h + h + h * h + h + h * a + a


@register
class DQN(_PolicyNetwork):
    type = "DQN"
    category = CATEGORY
    description = "A Deep Q-Network: scores every action in a state; the highest score is the greedy choice."
    details = (
        "A Q-network guesses, for a state, how much reward each action will bring from here on "
        "(its Q-value). It is a small network: Linear(state_dim → hidden_dim), ReLU, "
        "Linear(hidden_dim → hidden_dim), ReLU, Linear(hidden_dim → action_dim). With a state "
        "wired in, 'action' is the Q-values of that state, one per action ([action_dim] for one "
        "observation, [B, action_dim] for a batch): Argmax over them gives the greedy action. "
        "Unwired, 'action' is action_dim zeros. The weights start random, so the guesses mean "
        "nothing until the network is trained (wire 'model' into an Optimizer)."
    )
    outputs = (Port("model", "MODEL", description="The Q-network"),
               Port("action", description="Q-values of the state, one per action"))
    params = NETWORK_PARAMS + (Param("hidden_dim", "int", 128, "Width of the two hidden layers", min=1),)
    network = staticmethod(dqn_network)

    def explain(self, ctx, q_values):
        step(ctx, "q_values", "$Q(s, a)$ for every action $a$: the reward the network expects from taking it.",
             q_values=q_values)
        step(ctx, "greedy_action", "$\\arg\\max_a Q(s, a)$: the action a greedy agent takes.",
             greedy_action=q_values.argmax(dim=-1))
        return q_values


@register
class PPO(_PolicyNetwork):
    type = "PPO"
    category = CATEGORY
    description = "A PPO actor-critic: gives the probability of every action in a state, and the state's value."
    details = (
        "PPO trains two heads on one shared body (Linear(state_dim → hidden_dim), tanh, "
        "Linear(hidden_dim → hidden_dim), tanh). The actor gives a probability for each action "
        "(softmax, they add up to 1): the agent samples its action from them. The critic gives one "
        "number, how good the state is (its value), which training uses to judge whether an "
        "action went better than expected. With a state wired in, 'action' is the actor's "
        "probabilities ([action_dim], or [B, action_dim] for a batch); unwired, action_dim zeros. "
        "The model called on a state returns (probabilities, value)."
    )
    outputs = (Port("model", "MODEL", description="The actor-critic network"),
               Port("action", description="The actor's action probabilities for the state"))
    params = NETWORK_PARAMS + (Param("hidden_dim", "int", 64, "Width of the two hidden layers", min=1),)
    network = ActorCritic

    @staticmethod
    def weights(s: int, a: int, h: int) -> int:
        return _PolicyNetwork.weights(s, a, h) + h + 1  # and the critic's head

    def explain(self, ctx, answer):
        probs, value = answer
        step(ctx, "action_probs", "$\\pi(a \\mid s)$: the actor's probability of each action.", action_probs=probs)
        step(ctx, "value", "$V(s)$: the critic's estimate of the reward still to come.", value=value)
        return probs


class RewardHead(nn.Module):
    """CodefyUI's RLHF reward head: Linear, ReLU, Linear to one number; a sequence [B, T, H]
    is scored by its last token."""

    def __init__(self, input_dim: int, hidden_dim: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(input_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, 1))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if h.dim() == 3:
            h = h[:, -1, :]
        return self.net(h).squeeze(-1)


@register
class RewardModel(LibraryNode):
    type = "RewardModel"
    category = CATEGORY
    description = "An RLHF reward head: scores each item (a hidden state) with one number."
    details = (
        "In learning from human feedback, people say which of two answers is better, and a reward "
        "model learns to give the better one the higher score. This is its head: "
        "Linear(input_dim → hidden_dim), ReLU, Linear(hidden_dim → 1). hidden_states [B, H] gives "
        "one reward per item, [B]; a sequence [B, T, H] is scored by its last position. Unwired, "
        "'rewards' is empty. The weights start from 'seed', so two RewardModels with the same seed "
        "and sizes score alike."
    )
    inputs = (Port("hidden_states", optional=True, description="[B, H] or [B, T, H]"),)
    outputs = (Port("model", "MODEL", description="The reward head"),
               Port("rewards", description="One reward per item, [B]"))
    params = (
        Param("input_dim", "int", 128, "Size of one hidden state, H", min=1),
        Param("hidden_dim", "int", 64, "Width of the hidden layer", min=1),
        Param("seed", "int", 42, "Seed of the starting weights"),
    )
    stateful = True
    records_steps = True

    def run(self, ctx, params, hidden_states=None):
        d, h = params["input_dim"], params["hidden_dim"]
        if hidden_states is not None:
            need_rank(hidden_states, (2, 3), "RewardModel", "on 'hidden_states' ([B, H] or [B, T, H])")
            if hidden_states.shape[-1] != d:
                raise NodeError(f"RewardModel: 'hidden_states' has shape {shape_str(hidden_states.shape)} (last size "
                                f"{hidden_states.shape[-1]}) but input_dim is {d}; set input_dim to "
                                f"{hidden_states.shape[-1]}")
        model = build_layer(ctx, d * h + h + h + 1, "RewardModel weights", lambda: RewardHead(d, h),
                            seed=params["seed"])
        if hidden_states is None:
            return {"model": model, "rewards": torch.zeros(0, device=ctx.device)}
        x = to_layer_dtype(hidden_states, model)
        with torch.no_grad():
            rewards = model(x)
        step(ctx, "hidden_states", f"The hidden states, shape {shape_str(x.shape)}"
             + (" (the last position of each sequence is scored)." if x.dim() == 3 else "."), hidden_states=x)
        step(ctx, "rewards", "$r = W_2\\,\\mathrm{ReLU}(W_1 h + b_1) + b_2$: one score per item.", rewards=rewards)
        return {"model": model, "rewards": rewards}


# -- the KL term --------------------------------------------------------------------------------

@register
class KLDivergence(LibraryNode):
    type = "KLDivergence"
    category = CATEGORY
    description = "KL(p ‖ q): how far distribution p is from q (0 when they are the same)."
    details = (
        "The Kullback-Leibler divergence KL(p ‖ q) = Σ p · (log p − log q) over the last "
        "dimension is 0 when p and q give every outcome the same probability, and grows as they "
        "part. In RLHF it keeps the policy being trained (p) close to the reference model (q). "
        "input_kind probs: p and q are probabilities already (each row adds up to 1); logits: "
        "softmax is applied to both first. reduction batchmean divides the total by the batch "
        "size (the first size; the mathematically proper mean per item), sum adds everything, "
        "mean averages over every number, none gives one KL per item. p and q need the same shape."
    )
    inputs = (Port("p", description="The policy's distribution [..., V]"),
              Port("q", description="The reference distribution [..., V]"))
    outputs = (Port("kl", description="KL(p ‖ q)"),)
    params = (
        Param("input_kind", "select", "probs", "probs: p and q are probabilities; logits: softmax them first",
              options=("probs", "logits")),
        Param("reduction", "select", "batchmean", "How the KL of each item is combined",
              options=("batchmean", "sum", "mean", "none")),
    )
    records_steps = True

    def run(self, ctx, params, p, q):
        p, q = p.float(), q.float()
        if p.shape != q.shape:
            raise NodeError(f"KLDivergence: 'p' and 'q' must have the same shape, but p is {shape_str(p.shape)} "
                            f"and q is {shape_str(q.shape)}")
        if p.dim() == 0 or p.numel() == 0:
            raise NodeError(f"KLDivergence needs distributions [..., V] on 'p' and 'q', got shape {shape_str(p.shape)}")
        if params["input_kind"] == "logits":
            log_q, p_probs = F.log_softmax(q, dim=-1), F.softmax(p, dim=-1)
        else:
            log_q, p_probs = torch.log(q.clamp_min(1e-12)), p
        reduction = params["reduction"]
        if reduction == "none":
            kl = F.kl_div(log_q, p_probs, reduction="none").sum(dim=-1)
            kl = kl.reshape(-1) if kl.dim() > 1 else kl
        elif reduction == "mean":  # torch's own 'mean' (over every number), without its deprecation warning
            kl = F.kl_div(log_q, p_probs, reduction="none").mean()
        else:
            kl = F.kl_div(log_q, p_probs, reduction=reduction)
        step(ctx, "p", "$p$, the first distribution.", p=p_probs)
        step(ctx, "log_q", "$\\log q$.", log_q=log_q)
        step(ctx, "kl", f"$\\mathrm{{KL}}(p \\Vert q) = \\sum p\\,(\\log p - \\log q)$, reduction {reduction}.", kl=kl)
        return {"kl": kl}
