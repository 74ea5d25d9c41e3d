"""EnvWrapper, DQN, PPO, RewardModel and KLDivergence (apps/graphs/nodes/library/rl.py), each
against gymnasium's or torch's own computation on a small input."""
from __future__ import annotations

import copy
import pickle
import warnings

import gymnasium
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from apps.graphs import document
from apps.graphs.nodes.base import NodeError, registry
from apps.graphs.nodes.library import rl
from apps.runs.engine import RunOptions, execute, plan_run
from apps.runs.store import MemoryCaptureStore, freeze


def run(ctx, type_key, inputs=None, **given):
    cls = registry()[type_key]
    return cls().run(ctx, {**cls.coerce_params({})[0], **given}, **(inputs or {}))


def test_the_nodes_have_codefyuis_ports_and_params():
    declared = {key: ([p.name for p in registry()[key].inputs], [p.name for p in registry()[key].outputs],
                      {p.name: p.default for p in registry()[key].params})
                for key in ("EnvWrapper", "DQN", "PPO", "RewardModel", "KLDivergence")}
    assert declared == {
        "EnvWrapper": ([], ["env", "observation"], {"env_name": "CartPole-v1"}),
        "DQN": (["state"], ["model", "action"], {"state_dim": 4, "action_dim": 2, "hidden_dim": 128}),
        "PPO": (["state"], ["model", "action"], {"state_dim": 4, "action_dim": 2, "hidden_dim": 64}),
        "RewardModel": (["hidden_states"], ["model", "rewards"], {"input_dim": 128, "hidden_dim": 64, "seed": 42}),
        "KLDivergence": (["p", "q"], ["kl"], {"input_kind": "probs", "reduction": "batchmean"}),
    }
    assert all(registry()[k].category == "RL" for k in declared)
    assert [p.type for p in registry()["EnvWrapper"].outputs] == ["ANY", "TENSOR"]
    assert all(registry()[k].stateful for k in ("DQN", "PPO", "RewardModel"))
    assert not registry()["EnvWrapper"].cacheable


# -- EnvWrapper ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", rl.CLASSIC_CONTROL)
def test_envwrapper_resets_as_gymnasium_does_with_the_runs_seed(ctx, name):
    ctx.seed = 123
    out = run(ctx, "EnvWrapper", env_name=name)
    expected, _ = gymnasium.make(name).reset(seed=123)
    assert out["observation"].dtype == torch.float32
    assert torch.equal(out["observation"], torch.as_tensor(expected))
    env = out["env"]
    assert isinstance(env, rl.Environment) and env.observation_space.shape == expected.shape


def test_the_environment_steps_like_gymnasiums_with_numbers_or_tensors(ctx):
    ctx.seed = 5
    env = run(ctx, "EnvWrapper")["env"]
    own = gymnasium.make("CartPole-v1")
    own.reset(seed=5)
    for action in (torch.tensor(1), 0, torch.tensor([1]), np.int64(0)):
        ours, theirs = env.step(action), own.step(int(np.asarray(action).reshape(-1)[0]))
        assert np.array_equal(ours[0], theirs[0]) and ours[1:4] == theirs[1:4]
    assert env.steps == 4 and "4 steps taken" in repr(env)
    with pytest.raises(NodeError, match="one action number from 0 to 1"):
        env.step(torch.tensor([0.2, 0.8]))
    with pytest.raises(NodeError, match="one action number from 0 to 1"):
        env.step(5)
    pendulum = run(ctx, "EnvWrapper", env_name="Pendulum-v1")["env"]
    assert pendulum.step(torch.tensor([0.5]))[0].shape == (3,)
    with pytest.raises(NodeError, match=r"takes \[1\] numbers per step, not 2"):
        pendulum.step([0.1, 0.2])


def test_an_unseeded_run_still_gives_a_real_observation(ctx):
    ctx.seed = None
    out = run(ctx, "EnvWrapper", env_name="Acrobot-v1")
    assert out["observation"].shape == (6,) and "reset with seed" in repr(out["env"])


@pytest.mark.parametrize("name", ["ALE/Breakout-v5", "BreakoutNoFrameskip-v4", "Pong-v5", "SpaceInvaders-ram-v0",
                                  "MsPacmanDeterministic-v4"])
def test_atari_environments_are_refused_naming_what_they_need_and_what_is_here(ctx, name):
    with pytest.raises(NodeError) as caught:
        run(ctx, "EnvWrapper", env_name=name)
    text = str(caught.value)
    assert f"'{name}' is an Atari game" in text and "this server does not have" in text
    assert "CartPole-v1, MountainCar-v0, MountainCarContinuous-v0, Acrobot-v1, Pendulum-v1" in text


@pytest.mark.parametrize("name", ["Humanoid-v4", "HalfCheetah-v5", "Hopper-v4", "Walker2d-v4", "Ant-v5",
                                  "Reacher-v5", "Swimmer-v4", "InvertedPendulum-v5"])
def test_mujoco_environments_are_refused_naming_mujoco(ctx, name):
    with pytest.raises(NodeError, match=rf"'{name}' is a MuJoCo robot: it needs the MuJoCo physics engine.*"
                                        "Acrobot-v1, Pendulum-v1"):
        run(ctx, "EnvWrapper", env_name=name)


@pytest.mark.parametrize("name", ["DefinitelyNotARealEnv-v99", "FrozenLake-v1", "", "cartpole-v1"])
def test_unknown_environments_get_the_same_list(ctx, name):
    with pytest.raises(NodeError, match=r"not an environment this server knows.*the environments here are "
                                        "CartPole-v1, MountainCar-v0"):
        run(ctx, "EnvWrapper", env_name=name)


def test_box2d_environments_name_box2d(ctx):
    with pytest.raises(NodeError, match="'LunarLander-v3' needs the Box2D physics engine"):
        run(ctx, "EnvWrapper", env_name="LunarLander-v3")


def test_the_environment_survives_freeze_pickling_and_a_deep_copy(ctx):
    ctx.seed = 9
    env = run(ctx, "EnvWrapper")["env"]
    env.step(1)
    for copied in (pickle.loads(pickle.dumps(freeze(env))), copy.deepcopy(env)):
        assert isinstance(copied, rl.Environment) and repr(copied) == repr(env)
        assert np.array_equal(copied.step(0)[0], copy.deepcopy(env).step(0)[0])


def test_a_graph_runs_envwrapper_into_dqn_and_keeps_the_environment_as_a_capture():
    doc = document.normalise({
        "nodes": [{"id": "start", "type": "Start"},
                  {"id": "env", "type": "EnvWrapper", "data": {"params": {"env_name": "CartPole-v1"}}},
                  {"id": "dqn", "type": "DQN", "data": {"params": {"hidden_dim": 8}}}],
        "edges": [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "env"},
                  {"id": "s", "source": "env", "sourceHandle": "observation", "target": "dqn",
                   "targetHandle": "state"}],
        "settings": {"seed": 3}})
    store = MemoryCaptureStore(max_bytes=2**24)
    outcome = execute(plan_run(doc), RunOptions(run_id="rl", seed=3), lambda e: None, captures=store)
    assert outcome.status == "succeeded", outcome.error
    env = store.get("rl", "env", "env").value
    assert "CartPole-v1 environment" in repr(env) and pickle.loads(pickle.dumps(env)).name == "CartPole-v1"
    assert store.get("rl", "dqn", "action").value.shape == (2,)


# -- DQN and PPO --------------------------------------------------------------------------------

def test_dqn_is_codefyuis_q_network_and_scores_the_state(ctx):
    ctx.seed = 1
    state = torch.tensor([[0.1, -0.2, 0.03, 0.4], [0.0, 0.5, -0.1, 0.2]])
    out = run(ctx, "DQN", {"state": state}, hidden_dim=8)
    model = out["model"]
    assert [type(m) for m in model] == [nn.Linear, nn.ReLU, nn.Linear, nn.ReLU, nn.Linear]
    assert [tuple(m.weight.shape) for m in model if isinstance(m, nn.Linear)] == [(8, 4), (8, 8), (2, 8)]
    assert torch.allclose(out["action"], model(state)) and not out["action"].requires_grad
    torch.manual_seed(1)
    assert torch.equal(rl.dqn_network(4, 2, 8)[0].weight, model[0].weight)  # seeded from the run's seed


def test_dqn_and_ppo_unwired_give_action_dim_zeros(ctx):
    for kind in ("DQN", "PPO"):
        out = run(ctx, kind, action_dim=5, hidden_dim=4)
        assert torch.equal(out["action"], torch.zeros(5)) and isinstance(out["model"], nn.Module)


def test_ppo_gives_the_actors_probabilities_and_the_model_also_the_value(ctx):
    state = torch.tensor([0.3, -0.1, 0.2, 0.0])
    out = run(ctx, "PPO", {"state": state}, hidden_dim=6, action_dim=3)
    probs, value = out["model"](state)
    features = out["model"].shared(state)
    assert torch.allclose(out["action"], torch.softmax(out["model"].actor(features), -1))
    assert torch.allclose(out["action"], probs) and value.shape == (1,)
    assert out["action"].sum().item() == pytest.approx(1.0)


def test_dqn_and_ppo_name_a_state_of_the_wrong_size(ctx):
    for kind in ("DQN", "PPO"):
        with pytest.raises(NodeError, match=rf"{kind}: 'state' has shape \[1, 3\] \(last size 3\) but state_dim "
                                            "is 4; set state_dim to 3"):
            run(ctx, kind, {"state": torch.zeros(1, 3)})


def test_dqn_checks_its_weight_count_before_building(ctx):
    ctx.size_limit = 1000
    with pytest.raises(NodeError, match="DQN weights would need"):
        run(ctx, "DQN", hidden_dim=128)


def test_dqn_records_the_greedy_action_with_verbose_internals(ctx):
    ctx.verbose = True
    out = run(ctx, "DQN", {"state": torch.ones(4)}, hidden_dim=4)
    names = [s["name"] for s in ctx.steps]
    assert names == ["state", "q_values", "greedy_action"]
    assert ctx.steps[2]["tensors"]["greedy_action"].item() == out["action"].argmax().item()


# -- RewardModel ---------------------------------------------------------------------------------

def test_reward_model_starts_from_its_seed_as_codefyui_does(ctx):
    h = torch.randn(3, 5, generator=torch.Generator().manual_seed(0))
    out = run(ctx, "RewardModel", {"hidden_states": h}, input_dim=5, hidden_dim=4, seed=7)
    torch.manual_seed(7)
    expected = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 1))
    assert torch.allclose(out["rewards"], expected(h).squeeze(-1)) and out["rewards"].shape == (3,)
    again = run(ctx, "RewardModel", {"hidden_states": h}, input_dim=5, hidden_dim=4, seed=7)
    assert torch.equal(again["rewards"], out["rewards"])


def test_reward_model_scores_a_sequence_by_its_last_position_and_is_empty_unwired(ctx):
    h = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(1))
    out = run(ctx, "RewardModel", {"hidden_states": h}, input_dim=5, hidden_dim=4)
    assert torch.allclose(out["rewards"], out["model"](h[:, -1, :]))
    assert run(ctx, "RewardModel", input_dim=5)["rewards"].shape == (0,)


def test_reward_model_names_wrong_hidden_states(ctx):
    with pytest.raises(NodeError, match=r"'hidden_states' has shape \[2, 6\] \(last size 6\) but input_dim is 5"):
        run(ctx, "RewardModel", {"hidden_states": torch.zeros(2, 6)}, input_dim=5)
    with pytest.raises(NodeError, match="RewardModel expects a 2-D or 3-D tensor"):
        run(ctx, "RewardModel", {"hidden_states": torch.zeros(5)}, input_dim=5)


# -- KLDivergence --------------------------------------------------------------------------------

P = torch.tensor([[0.7, 0.2, 0.1], [0.25, 0.25, 0.5]])
Q = torch.tensor([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]])


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "mean"])
def test_kl_of_probabilities_is_torchs(ctx, reduction):
    out = run(ctx, "KLDivergence", {"p": P, "q": Q}, reduction=reduction)["kl"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that its 'mean' will change
        assert torch.allclose(out, F.kl_div(Q.log(), P, reduction=reduction))


def test_kl_none_gives_one_number_per_item_and_matches_the_formula(ctx):
    out = run(ctx, "KLDivergence", {"p": P, "q": Q}, reduction="none")["kl"]
    assert torch.allclose(out, (P * (P.log() - Q.log())).sum(-1)) and out.shape == (2,)


def test_kl_of_logits_softmaxes_both(ctx):
    p, q = torch.tensor([[1.0, 2.0, 0.5]]), torch.tensor([[0.0, 0.0, 0.0]])
    out = run(ctx, "KLDivergence", {"p": p, "q": q}, input_kind="logits")["kl"]
    assert torch.allclose(out, torch.distributions.kl_divergence(
        torch.distributions.Categorical(logits=p), torch.distributions.Categorical(logits=q)).mean())
    same = run(ctx, "KLDivergence", {"p": p, "q": p}, input_kind="logits")["kl"]
    assert same.abs().item() < 1e-6


def test_kl_names_a_shape_mismatch(ctx):
    with pytest.raises(NodeError, match=r"KLDivergence: 'p' and 'q' must have the same shape, but p is \[2, 3\] "
                                        r"and q is \[2, 4\]"):
        run(ctx, "KLDivergence", {"p": P, "q": torch.ones(2, 4) / 4})
