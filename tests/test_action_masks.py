"""Invalid-action masks (canter.envs.masks): packing, masked policies and Q values on every acting
and learning path, learning under masks, checkpoints, and refusals."""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.algorithms.dqn import DQN, DQNConfig
from canter.algorithms.ppo import PPO, PPOConfig
from canter.data.batch import ReplayBatch
from canter.envs.make import make_env, make_vec_env
from canter.envs.masks import MASKED, MaskedBox, apply_mask, mask_width, split_mask
from canter.envs.spaces import describe_space, space_from_dict, space_to_dict, spaces_match
from canter.errors import CanterError
from support import assert_masks_packed, assert_train_refused
from test_fast_paths import assert_manual_gradients_match_autograd

ENV = "masked_env:MaskedPick-v0"
N = 6
SPACES = (MaskedBox(np.r_[-np.ones(4), np.zeros(N)], np.ones(4 + N), N), gym.spaces.Discrete(N))


def masked_obs(n: int, seed: int, d: int = 4, allow_none_every: int = 0) -> torch.Tensor:
    """``n`` packed observations: ``d`` normal features, then a random mask allowing 1-3 actions
    (every ``allow_none_every``-th row allows none, which means all)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    mask = torch.zeros(n, N)
    for i in range(n):
        k = int(torch.randint(1, 4, (1,), generator=g))
        mask[i, torch.randperm(N, generator=g)[:k]] = 1.0
        if allow_none_every and i % allow_none_every == 0:
            mask[i] = 0.0
    return torch.cat([x, mask], 1)


def allowed_of(obs: torch.Tensor) -> np.ndarray:
    return split_mask(obs.numpy(), N)[1]


# -- env packing and spaces ---------------------------------------------------------------------------
@pytest.mark.parametrize("discrete_obs", [False, True])
def test_env_observations_are_packed_with_their_mask(discrete_obs):
    env = make_vec_env(ENV, 3, env_kwargs={"discrete_obs": discrete_obs})
    space = env.single_observation_space
    assert isinstance(space, MaskedBox) and space.shape == (2 * N,) and mask_width(space) == N
    obs = env.reset(seed=0)
    assert obs.shape == (3, 2 * N) and obs.dtype == np.float32
    inner = [e.unwrapped for e in env.env.envs]
    for row, e in zip(obs, inner):
        np.testing.assert_array_equal(row[:N], np.eye(N)[e.target])  # one-hot, also from a Discrete observation
        np.testing.assert_array_equal(row[N:], e.mask)
    env.close()
    assert isinstance(make_env(ENV).observation_space, MaskedBox)  # the single env of play / video too


def test_a_mask_from_the_envs_action_masks_method_is_packed_and_kept_to(tmp_path):
    """sb3-contrib's MaskablePPO reads masks from an action_masks() method; such an env trained unmasked
    here (nothing read the method). MethodActionMask packs its answer after every reset and step, and
    PPO on it never takes a masked action (the env raises on one)."""
    from canter.envs.masks import MethodActionMask

    env = make_vec_env("masked_env:MethodPick-v0", 2)
    assert mask_width(env.single_observation_space) == N
    assert_masks_packed(env, N, lambda e: e.target)
    trainer = canter.make_trainer("ppo", "masked_env:MethodPick-v0", seed=0, max_steps=256, n_envs=2, n_steps=64,
                                  eval_every=0, eval_episodes=2)
    with trainer:
        list(trainer())  # the strict env raised on any masked action
    with pytest.raises(CanterError, match=r"the env has no action_masks\(\) method"):
        MethodActionMask(gym.make("CartPole-v1"))


def test_masked_space_round_trips_and_never_matches_an_unmasked_one():
    space = make_vec_env(ENV, 1).single_observation_space
    back = space_from_dict(json.loads(json.dumps(space_to_dict(space))))
    assert isinstance(back, MaskedBox) and back.mask_width == N and spaces_match(space, back)
    plain = gym.spaces.Box(space.low, space.high, dtype=np.float32)
    assert not spaces_match(space, plain)
    assert "action mask of 6" in describe_space(space)


def test_split_and_apply_mask():
    obs = np.array([[0.5, 1, 0, 1], [0.5, 0, 0, 0]], np.float32)  # 1 feature, 3 actions; row 2 allows none
    x, allowed = split_mask(obs, 3)
    np.testing.assert_array_equal(x, obs[:, :1])
    np.testing.assert_array_equal(allowed, [[True, False, True], [True, True, True]])
    q = np.array([[1.0, 9.0, 2.0], [1.0, 9.0, 2.0]], np.float32)
    np.testing.assert_array_equal(apply_mask(q, allowed), [[1.0, MASKED, 2.0], [1.0, 9.0, 2.0]])
    t = apply_mask(torch.from_numpy(q), torch.from_numpy(allowed))
    np.testing.assert_array_equal(t.numpy(), apply_mask(q, allowed))


# -- actor-critics ------------------------------------------------------------------------------------
def _favour_action(algo: PPO, action: int) -> None:
    """Make the policy head strongly prefer ``action`` (its bias), whatever the observation."""
    with torch.no_grad():
        if algo.model.stacked:
            algo.model.body.biases[-1][0, 0, action] = 50.0
        else:  # two MLPs of their own widths
            algo.model.actor[-1].bias[action] = 50.0


@pytest.mark.parametrize("stacked", [True, "two MLPs", False])
def test_actor_critic_never_picks_a_masked_action(stacked):
    """``stacked`` True: one stacked network; "two MLPs": a critic_net_arch of its own (their NumPy paths too);
    False: the separate networks' torch branches alone."""
    algo = PPO(*SPACES, PPOConfig(net_arch=[16], critic_net_arch=[8] if stacked == "two MLPs" else None), seed=0)
    if stacked:
        _favour_action(algo, 0)  # the unmasked policy would pick action 0 almost always
    else:
        algo.model.stacked = False  # the separate-network branches of action / action_value
        algo.model.actor = torch.nn.Sequential(torch.nn.Linear(4, N))
        algo.model.critic = torch.nn.Sequential(torch.nn.Linear(4, 1))
    obs = masked_obs(500, seed=1)
    allowed = allowed_of(obs)
    logits = algo.model.action(obs).detach()
    assert (logits.numpy()[~allowed] == MASKED).all() and (logits.numpy()[allowed] > MASKED / 2).all()
    paths = {"act": algo.act(obs).actions.numpy(), "predict": algo.act(obs, deterministic=True).actions.numpy()}
    if stacked:
        paths["act_numpy"] = algo.act_numpy(obs.numpy()).actions
        paths["predict_numpy"] = algo.act_numpy(obs.numpy(), deterministic=True).actions
    for name, actions in paths.items():
        assert allowed[np.arange(500), actions].all(), name
    if stacked:  # where action 0 is allowed the favoured action is still taken
        assert (paths["predict"][allowed[:, 0]] == 0).all()
        out = algo.act(obs)  # log-probabilities over the allowed actions only: they sum to 1 per row
        probs = torch.softmax(algo.model.action(obs).detach(), -1)
        torch.testing.assert_close(probs.sum(-1), torch.ones(500))
        torch.testing.assert_close(out.log_probs, probs.log().gather(1, out.actions.view(-1, 1)).squeeze(1))


@pytest.mark.parametrize("ent", [0.0, 0.01])
@pytest.mark.parametrize("critic", [None, [8]])  # [8]: two MLPs of their own widths
def test_masked_ppo_gradients_match_autograd(ent, critic):
    """The hand-derived gradient through masked logits equals autograd's through masked_fill (rows
    that allow nothing included)."""
    algo = PPO(*SPACES, PPOConfig(net_arch=[16, 16], ent_coef=ent, clip_range_vf=0.2, critic_net_arch=critic), seed=3)
    assert_manual_gradients_match_autograd(algo, masked_obs(64, seed=5, allow_none_every=7))


def test_masked_centralised_critic_gradients_match_autograd():
    """MAPPO's split input with the mask at the end of the actor's row."""
    from canter.algorithms.mappo import MAPPO, MAPPOConfig

    w = 4 + N
    low, high = np.full((2, w), -np.inf), np.full((2, w), np.inf)
    low[:, -N:], high[:, -N:] = 0.0, 1.0
    algo = MAPPO(MaskedBox(low, high, N), gym.spaces.Discrete(N), MAPPOConfig(net_arch=[16, 16], ent_coef=0.01), seed=3)
    obs = torch.stack([masked_obs(64, seed=6, allow_none_every=7), masked_obs(64, seed=7)], 1)
    obs[:, 1, -N:] = 0.0  # the critic's row has no mask
    allowed = allowed_of(obs[:, 0])
    assert allowed[np.arange(64), algo.act(obs).actions.numpy()].all()
    assert allowed[np.arange(64), algo.act_numpy(obs.numpy()).actions].all()
    assert_manual_gradients_match_autograd(algo, obs)


# -- DQN ------------------------------------------------------------------------------------------------
def test_dqn_acts_and_bootstraps_over_allowed_actions_only():
    algo = DQN(*SPACES, DQNConfig(net_arch=[16], n_quantiles=0), seed=0)
    obs = masked_obs(400, seed=2)
    allowed = allowed_of(obs)
    rows = np.arange(400)
    algo.epsilon = 1.0  # every action random
    assert allowed[rows, algo.act(obs).actions.numpy()].all()
    assert allowed[rows, algo.act_numpy(obs.numpy()).actions].all()
    for actions in (algo.act(obs, deterministic=True).actions.numpy(), algo.act_numpy(obs.numpy(), True).actions):
        assert allowed[rows, actions].all()
    raw = algo.q.q(obs[:, :4]).detach()  # the network's values without the mask
    assert (raw.argmax(1).numpy() != algo.q.value(obs).argmax(1).numpy()).any()  # the mask changes some choices

    ones = torch.ones(400)
    batch = ReplayBatch(obs, torch.zeros(400, dtype=torch.long), ones, obs, ones * 0, ones * algo.config.gamma,
                        ones, ones)
    next_q = algo.q_target.q(obs[:, :4]).detach().masked_fill(~torch.from_numpy(allowed), -np.inf)
    expected = 1.0 + algo.config.gamma * next_q.max(1).values
    torch.testing.assert_close(algo.td_target(batch), expected)


@pytest.mark.parametrize("double_q", [False, True])
def test_quantile_dqn_bootstraps_from_an_allowed_action(double_q):
    algo = DQN(*SPACES, DQNConfig(net_arch=[16], n_quantiles=8, double_q=double_q), seed=0)
    obs = masked_obs(300, seed=3)
    allowed = torch.from_numpy(allowed_of(obs))

    ones = torch.ones(300)
    batch = ReplayBatch(obs, torch.zeros(300, dtype=torch.long), ones * 0, obs, ones * 0, ones * algo.config.gamma,
                        ones, ones)
    target = algo.td_target(batch)  # [B, N] quantiles of the chosen next action, times gamma
    z = algo.q_target.quantiles(obs).detach()
    picker = algo.q.quantiles(obs).detach() if double_q else z
    best = picker.mean(-1).masked_fill(~allowed, -np.inf).argmax(1)
    torch.testing.assert_close(target, algo.config.gamma * z[torch.arange(300), best])


# -- learning, runs and checkpoints -----------------------------------------------------------------------
# MaskedPick raises on a masked action, so each run below also shows that no acting path (warm-up,
# exploration, evaluation) ever took one. Uniform play over the allowed actions earns ~3.6 of 10.
LEARN = {
    "ppo": dict(max_steps=8192, n_envs=8, n_steps=64, batch_size=128, n_epochs=4, lr=1e-3),
    "a2c": dict(max_steps=8192),
    "recurrent_ppo": dict(max_steps=12288, n_envs=8, n_steps=64, batch_size=128, lr=3e-3, lstm_hidden=32,
                          critic_lstm=False),  # the masks, not the critic's LSTM (which doubles the cost)
    "dqn": dict(max_steps=6000, learning_starts=500, train_freq=4, exploration_fraction=0.3, lr=1e-3,
                target_update_interval=500),
}


@pytest.mark.parametrize("algo", list(LEARN))
def test_learns_under_masks(algo, tmp_path):
    canter.train(algo, env=ENV, seed=0, run_dir=str(tmp_path / "run"), quiet=True, eval_every=0,
                 eval_episodes=10, **LEARN[algo])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["last_eval_return"] >= 9.0, summary


def test_checkpoint_loads_and_acts_under_masks(tmp_path, capsys):
    run = tmp_path / "run"
    canter.train("ppo", env=ENV, seed=1, run_dir=str(run), quiet=True, eval_every=0, eval_episodes=5,
                 **LEARN["ppo"])
    agent = canter.load(str(run))
    assert isinstance(agent.observation_space, MaskedBox)
    env = make_env(ENV)
    obs, _ = env.reset(seed=5)
    total = 0.0
    for _ in range(10):  # the strict env raises on a masked action
        obs, reward, *_ = env.step(int(agent.predict(obs[None])[0]))
        total += reward
    assert total >= 9.0
    from canter.cli import main

    assert main(["eval", str(run), "--episodes", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mean_return"] >= 9.0


def test_normalised_observations_keep_their_mask(tmp_path):
    agent = canter.train("ppo", env=ENV, seed=0, run_dir=str(tmp_path / "run"), quiet=True, eval_every=0,
                         eval_episodes=2, max_steps=1024, n_envs=4, n_steps=64, normalize_obs=True)
    obs = masked_obs(5, seed=0, d=N).numpy()
    normed = agent.normalize_obs(obs)
    np.testing.assert_array_equal(normed[:, N:], obs[:, N:])
    assert not np.allclose(normed[:, :N], obs[:, :N])


def test_datasets_and_explorers_keep_to_the_mask(tmp_path):
    """A random dataset (the strict env raises on a masked action) trains CQL, whose greedy policy
    then picks targets; an explorer's random warm-up and IMPALA's in-process explorer keep to the mask."""
    from canter.config import resolve_config
    from canter.data.dataset import collect
    from canter.distributed.explorer import Explorer

    data = collect(ENV, 3000, None, seed=1)
    assert data.info["mean_return"] < 6  # random play over allowed actions: ~3.6 of 10
    data.save(tmp_path / "random")
    trainer = canter.make_trainer("cql", dataset=str(tmp_path / "random"), seed=0, max_steps=1500, eval_every=500,
                                  eval_episodes=5, target_reward=None)
    for _ in trainer():
        pass
    trainer.close()
    assert trainer.best_eval_return >= 9.0
    run, cfg = resolve_config("dqn", ENV, seed=0, n_envs=4)
    env = make_vec_env(run.env, run.n_envs)
    agent = canter.make_agent(run, cfg, env.single_observation_space, env.single_action_space)
    r = Explorer(agent, env, seed=3).rollout(None, version=0, n_steps=200, random=True)
    assert r["steps"] == 800  # 200 random steps of 4 envs, none masked (the env would raise)
    env.close()
    impala = canter.make_trainer("impala", ENV, seed=1, max_steps=12_000, eval_every=4000, eval_episodes=5)
    list(impala())
    impala.close()
    assert impala.best_eval_return >= 9.0


@pytest.mark.parametrize("algo", ["sac_discrete", "acer"])
def test_algorithms_without_masks_refuse_masked_envs(algo, capsys, tmp_path):
    assert_train_refused(capsys, tmp_path, ["train", algo, "--env", ENV], "carry an action mask")


def test_a_model_that_does_not_apply_masks_is_refused():
    with pytest.raises(CanterError, match="does not apply action masks"):
        PPO(*SPACES, PPOConfig(), model="tests_mask_free_model")


@canter.register("model", "tests_mask_free_model")
class _MaskFreeModel(torch.nn.Module):
    """A user model without ``action_masks``."""

    def __init__(self, observation_space, action_space, **kw):
        super().__init__()
        self.lin = torch.nn.Linear(observation_space.shape[0], action_space.n)


# -- multi-agent -----------------------------------------------------------------------------------------
MA_ENV = "pettingzoo:tests.match_agents"


@pytest.mark.parametrize("algo,policies", [("ppo", "shared"), ("dqn", "agent")])
def test_multiagent_masks(algo, policies, tmp_path):
    """Each agent's mask allows its target and one other action (the env raises on the third)."""
    pytest.importorskip("pettingzoo")  # skipped without pettingzoo, as the multi-agent tests are
    from support import HPARAMS

    kwargs = {"n_agents": 2, "masked": True}
    env = make_vec_env(MA_ENV, 2, env_kwargs=kwargs, policies=policies)
    spaces = [env.single_observation_space] if policies == "shared" else list(env.single_observation_space.values())
    assert all(isinstance(s, MaskedBox) and s.shape == (6,) for s in spaces)
    env.close()
    canter.train(algo, env=MA_ENV, env_kwargs=kwargs, policies=policies, seed=0, max_steps=30_000,
                 target_reward=7.5, run_dir=tmp_path / "run", **HPARAMS[algo])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["solved"] and summary["best_eval_return"] >= 7.5


def test_qmix_under_masks(tmp_path):
    """Each agent's mask goes to the last columns of its row of the joint observation; QMIX's agents
    act, explore and bootstrap over their allowed actions (the env raises on any other)."""
    kwargs = {"n_agents": 2, "masked": True}
    env = make_vec_env(MA_ENV, 2, env_kwargs=kwargs, policies="joint")
    space = env.single_observation_space
    assert isinstance(space, MaskedBox) and space.shape == (3, 6 + 3) and space.mask_width == 3
    obs = env.reset(seed=0)
    inner = env.env.inner.envs
    for c in range(2):
        for i, name in enumerate(inner[c].possible_agents):
            np.testing.assert_array_equal(obs[c, i, :3], np.eye(3)[inner[c].targets[name]])
            np.testing.assert_array_equal(obs[c, i, -3:], inner[c].masks[name])
    env.close()
    canter.train("qmix", env=MA_ENV, env_kwargs=kwargs, seed=0, run_dir=tmp_path / "run", target_reward=15.0,
                 max_steps=30_000, n_envs=4, eval_every=2_000)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["solved"] and summary["best_eval_return"] >= 15.0


def test_qmix_bootstraps_from_allowed_actions():
    from canter.algorithms.qmix import QMIX, QMIXConfig

    k, w, n = 3, 5, 4
    low, high = np.full((k + 1, w + n), -np.inf), np.full((k + 1, w + n), np.inf)
    low[:, -n:], high[:, -n:] = 0.0, 1.0
    algo = QMIX(MaskedBox(low, high, n), gym.spaces.MultiDiscrete([n] * k), QMIXConfig(), seed=0)
    g = torch.Generator().manual_seed(0)
    obs = torch.randn(200, k + 1, w + n, generator=g)
    obs[..., -n:] = (torch.rand(200, k + 1, n, generator=g) < 0.4).float()
    allowed = torch.from_numpy(split_mask(obs.numpy(), n)[1][:, :k])
    ones = torch.ones(200)
    batch = ReplayBatch(obs, torch.zeros(200, k), ones * 0, obs, ones * 0, ones, ones, ones)

    def raw_q(net):  # the agent network on the rows without their masks
        ids = torch.eye(k).expand(200, -1, -1)
        return net.agent(torch.cat([obs[:, :k, :w], ids], -1)).detach()

    pick = raw_q(algo.q).masked_fill(~allowed, -np.inf).argmax(2, keepdim=True)  # Double Q: the online network picks
    best = raw_q(algo.q_target).gather(2, pick).squeeze(2)
    torch.testing.assert_close(algo.td_target(batch), algo.q_target.mix(best, obs).detach())
    algo.epsilon = 1.0
    actions = algo.act(obs).actions.numpy()
    assert allowed.numpy()[np.arange(200)[:, None], np.arange(k), actions].all()


def test_mappo_under_masks(tmp_path):
    """A centralised critic's observation ``[2, w]`` carries the agent's mask at the end of the actor's row."""
    kwargs = {"n_agents": 2, "masked": True}
    env = make_vec_env(MA_ENV, 2, env_kwargs=kwargs, central_state=True)
    space = env.single_observation_space
    assert isinstance(space, MaskedBox) and space.mask_width == 3 and space.shape[0] == 2
    obs = env.reset(seed=0)
    inner = env.env.envs
    for row, (c, name) in enumerate((c, a) for c in range(2) for a in inner[c].possible_agents):
        np.testing.assert_array_equal(obs[row, 0, :3], np.eye(3)[inner[c].targets[name]])
        np.testing.assert_array_equal(obs[row, 0, -3:], inner[c].masks[name])
        assert not obs[row, 1, -3:].any()
    env.close()
    canter.train("mappo", env=MA_ENV, env_kwargs=kwargs, seed=0, max_steps=20_000, target_reward=7.5,
                 run_dir=tmp_path / "run", n_envs=4, eval_every=2048, n_steps=64, batch_size=128, n_epochs=4)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["solved"] and summary["best_eval_return"] >= 7.5
