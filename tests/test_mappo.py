"""MAPPO: the centralised-critic observations, decentralised actors, learning and bad input."""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.algorithms.mappo import MAPPO, MAPPOConfig  # noqa: E402
from canter.algorithms.ppo import PPO, PPOConfig  # noqa: E402
from canter.data.batch import RolloutBatch  # noqa: E402
from canter.envs import make_vec_env  # noqa: E402
from canter.errors import CanterError  # noqa: E402
from canter.models.mlp import ActorCritic  # noqa: E402
from support import assert_one_line_error, assert_train_refused, run_cli  # noqa: E402

ENV = "pettingzoo:tests.match_agents"
MIXED = "pettingzoo:tests.mixed_agents"


@pytest.mark.parametrize("state", [True, False])
def test_each_agent_observes_its_own_row_then_the_state_and_its_index(state):
    env = make_vec_env(ENV, 2, central_state=True, env_kwargs={"n_agents": 3, "state": state, "miss_leaves": True})
    assert env.single_observation_space.shape == (2, 12)  # width: a 9-entry state + 3 agent ids
    obs = env.reset(seed=0)
    own, critic = obs[:, 0], obs[:, 1]
    assert np.all(own[:, :3].sum(1) == 1) and np.all(own[:, 3:] == 0)
    for copy in range(2):
        rows = slice(3 * copy, 3 * copy + 3)
        np.testing.assert_array_equal(critic[rows, :9], np.tile(own[rows, :3].reshape(9), (3, 1)))  # every target
        np.testing.assert_array_equal(critic[rows, 9:], np.eye(3))  # the agent's one-hot index
    actions = own[:, :3].argmax(1)
    actions[1] = (actions[1] + 1) % 3  # copy 0's agent_1 misses and leaves
    step = env.step(actions)
    if state:  # the test env's state() zeroes an agent's part on the step it leaves
        assert np.all(step.obs[0:3, 1, 3:6] == 0) and np.all(step.obs[0:3, 1, :9].sum(1) == 2)
    else:  # canter's concatenation keeps its final observation in the state it leaves in (the value that
        # bootstraps a truncation sees it), and zeroes it from the next step
        np.testing.assert_array_equal(step.obs[0:3, 1, 3:6], np.tile(step.obs[1, 0, :3], (3, 1)))
        assert np.all(step.obs[0:3, 1, :9].sum(1) == 3)
    assert np.all(step.obs[3:, 1, :9].sum(1) == 3)
    after = env.step(step.obs[:, 0, :3].argmax(1))
    np.testing.assert_array_equal(after.obs[1, 0], step.obs[1, 0])  # its own row keeps its final observation
    assert not after.valid[1] and after.valid[[0, 2]].all()
    assert np.all(after.obs[0:3, 1, 3:6] == 0)  # gone from the state after the step it left in
    env.close()



def test_the_concatenated_state_leaves_out_action_masks():
    """Masked observations and no state(): the state is the agents' observations without their masks
    (building it once raised a bare TypeError)."""
    env = make_vec_env(ENV, 2, central_state=True, env_kwargs={"n_agents": 2, "state": False, "masked": True})
    obs = env.reset(seed=0)
    assert obs.shape == (4, 2, 11)  # a 6-entry state + 2 agent ids, then the 3-entry mask
    for copy in range(2):
        rows = slice(2 * copy, 2 * copy + 2)
        own = obs[rows, 0, :3]
        np.testing.assert_array_equal(obs[rows, 1, :6], np.tile(own.reshape(6), (2, 1)))
        np.testing.assert_array_equal(obs[rows, 1, 6:8], np.eye(2))
    env.close()

@pytest.mark.parametrize("stacked", [True, False])
def test_actors_read_only_their_row_and_critics_only_the_state(stacked):
    spaces = gym.spaces.Box(-1, 1, (2, 6)), gym.spaces.Discrete(3)
    algo = MAPPO(*spaces, MAPPOConfig(), seed=0)
    model = algo.model if stacked else ActorCritic(*spaces, stacked=False, encoder="split")
    torch.manual_seed(0)
    obs = torch.randn(32, 2, 6)
    other_state, other_own = obs.clone(), obs.clone()
    other_state[:, 1] = torch.randn(32, 6)
    other_own[:, 0] = torch.randn(32, 6)
    with torch.no_grad():
        logits, values = model.action_value(obs)
        torch.testing.assert_close(model.action(other_state), logits)  # the actor ignores the state
        torch.testing.assert_close(model.value(other_own), values)  # the critic ignores the agent's own row
        assert not torch.allclose(model.action(other_own), logits)
        assert not torch.allclose(model.value(other_state), values)
    if stacked:  # the NumPy acting path agrees with torch's
        act = algo.act_numpy(obs.numpy(), deterministic=False)
        np.testing.assert_allclose(act.values, values.numpy(), rtol=1e-5, atol=1e-6)


def test_value_normalisation_learns_standardised_returns_and_scales_values_back():
    spaces = gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2)
    g = torch.Generator().manual_seed(0)
    obs = torch.randn(256, 4, generator=g)
    returns = 1000 + 10 * torch.randn(256, generator=g)
    losses = {}
    for normalize in (True, False):
        algo = PPO(*spaces, PPOConfig(normalize_value=normalize, batch_size=64, n_epochs=2), seed=0)
        with torch.no_grad():
            out = algo.act(obs)
        batch = RolloutBatch(obs, out.actions, out.log_probs, out.values, torch.randn(256, generator=g), returns)
        losses[normalize] = algo.learn(batch)["value_loss"]
    assert losses[True] < 10 and losses[False] > 1e5  # standardised targets, against raw returns near 1000
    assert PPO(*spaces, PPOConfig(normalize_value=True), seed=0)._value_scale() == (0.0, pytest.approx(1.0))
    algo = PPO(*spaces, PPOConfig(normalize_value=True, batch_size=64, n_epochs=2), seed=0)
    algo.learn(batch)
    mean, std = algo._value_scale()
    assert mean == pytest.approx(returns.mean().item(), abs=0.01) and std == pytest.approx(returns.std().item(), rel=0.01)
    with torch.no_grad():  # GAE sees returns' units: the critic's output scaled back, on every acting path
        values = algo.value(obs)
        torch.testing.assert_close(values, algo.model.value(obs) * std + mean)
        torch.testing.assert_close(algo.act(obs).values, values)
    np.testing.assert_allclose(algo.act_numpy(obs[:8].numpy()).values, values[:8].numpy(), rtol=1e-5)
    restored = PPO(*spaces, PPOConfig(normalize_value=True), seed=1)
    restored.load_state_dict(algo.state_dict())
    assert restored._value_scale() == (mean, std)



def test_value_clipping_with_normalisation_centres_on_the_critics_own_old_outputs():
    """The rollout's values are in returns' units, scaled back with the statistics of that moment; the
    clip window must sit on the critic's output then, not on those values standardised by statistics the
    new returns moved (they once were: with clip_range_vf every row fell outside, no value gradient)."""
    spaces = gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2)
    g = torch.Generator().manual_seed(0)
    obs = torch.randn(256, 4, generator=g)
    algo = PPO(*spaces, PPOConfig(normalize_value=True, clip_range_vf=0.2, batch_size=256, n_epochs=1), seed=0)
    with torch.no_grad():
        first = RolloutBatch(obs, *algo.act(obs)[:3], torch.randn(256, generator=g), torch.randn(256, generator=g))
    algo.learn(first)  # statistics near mean 0, std 1
    with torch.no_grad():
        out = algo.act(obs)
        raw = algo.model.value(obs)  # the critic's own (standardised) outputs
    seen = []
    algo._epochs = lambda batch, grads: seen.append(batch) or []
    algo.learn(RolloutBatch(obs, out.actions, out.log_probs, out.values, torch.randn(256, generator=g),
                            10 + torch.randn(256, generator=g)))  # returns that move the statistics
    torch.testing.assert_close(seen[0].values, raw, rtol=1e-4, atol=1e-4)
    mean, std = algo._value_scale()
    assert mean > 4  # ...and the targets are standardised by the moved statistics
    torch.testing.assert_close(seen[0].returns.mean(), torch.tensor((10 - mean) / std), rtol=0.05, atol=0.05)

@pytest.mark.parametrize("env_id,kwargs,policies", [
    (ENV, {"n_agents": 3, "team": True}, "shared"),  # 1 per agent only when all three match: random play earns 0.3
    (MIXED, {}, "type"),  # a speaker and two listeners, a policy (actor and critic) per type
])
def test_mappo_learns(env_id, kwargs, policies, tmp_path, capsys):
    canter.train("mappo", env=env_id, env_kwargs=kwargs, policies=policies, seed=0, max_steps=60_000,
                 target_reward=7.5, run_dir=tmp_path / "run", n_envs=4, eval_every=2048, n_steps=64, batch_size=128,
                 n_epochs=4)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["solved"] and summary["best_eval_return"] >= 7.5
    code, out, err = run_cli(capsys, "eval", str(tmp_path / "run"), "--episodes", "6", "--json")
    assert code == 0 and json.loads(out)["mean_return"] >= 7.0, err
    code, _, err = run_cli(capsys, "collect", str(tmp_path / "run"), "--transitions", "10",
                           "--out", str(tmp_path / "data"))
    assert_one_line_error(code, err, "centralised critic" if policies == "shared" else "several policies")
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("argv,needle", [
    (["train", "mappo", "--env", "CartPole-v1"], "mappo trains multi-agent envs"),
    (["train", "ppo", "--env", ENV, "--set", "central_state=true"], "set hparams.encoder=split"),
    (["train", "dqn", "--env", ENV, "--set", "central_state=true"], "for actor-critic algorithms"),
    (["train", "ppo", "--env", "CartPole-v1", "--set", "central_state=true"], "'central_state' is for multi-agent"),
    (["train", "mappo", "--env", ENV, "--set", "shared_trunk=true"], "shared_trunk cannot be used"),
    (["train", "mappo", "--env", ENV, "--set", "encoder=flat"], "encoder"),
    (["train", "mappo", "--env", ENV, "--explorers", "2"], "normalize_value"),
    (["train", "recurrent_ppo", "--env", ENV, "--set", "central_state=true"], "has no centralised critic"),
    (["train", "mappo", "--env", "pettingzoo:pettingzoo.classic.tictactoe_v3"], "is a turn-based game (train ppo"),
    # Discrete observations (rps_v2) were refused without naming what to train instead
    (["train", "mappo", "--env", "pettingzoo:pettingzoo.classic.rps_v2"], "observe Discrete; train ppo without"),
    # images reached the split encoder's fully connected layers as raw pixels (KAZ's image mode: 354M parameters)
    (["train", "mappo", "--env", ENV, "--env-kwargs", "{image_obs: true}", "--max-steps", "64"],
     "agent 'agent_0' of 'pettingzoo:tests"),
    (["train", "mappo", "--env", ENV, "--env-kwargs", "{image_obs: true}", "--set", "policies=agent",
      "--max-steps", "64"], "observes images Box(0, 255, (8, 8, 3), uint8)"),
    (["train", "ppo", "--env", ENV, "--env-kwargs", "{image_obs: true}", "--set", "central_state=true", "--set",
      "hparams.encoder=split", "--max-steps", "64"], "train ppo without central_state"),
    (["train", "mappo", "--env", ENV, "--env-kwargs", "{image_state: true}", "--max-steps", "64"],
     "its state() is an image"),
])
def test_mappo_bad_input_is_one_line(argv, needle, capsys, tmp_path):
    assert_train_refused(capsys, tmp_path, argv, needle)


def test_image_observations_and_state_are_refused_only_where_rows_are_flat():
    """A centralised critic and QMIX read flat rows; one shared policy (a CNN) takes the same env's images."""
    kwargs = {"n_agents": 2, "image_obs": True, "image_state": True}
    env = make_vec_env(ENV, 2, env_kwargs=kwargs)
    assert env.single_observation_space == gym.spaces.Box(0, 255, (8, 8, 3), np.uint8)
    assert env.reset(seed=0).dtype == np.uint8
    env.close()
    for settings in ({"central_state": True}, {"policies": "joint"}):
        with pytest.raises(CanterError, match="observes images"):
            make_vec_env(ENV, 2, env_kwargs=kwargs, **settings)
