"""Invalid-action masks for MultiDiscrete and MultiBinary actions (sb3-contrib MaskablePPO's layout: one
entry per choice of each sub-action, concatenated; each sub-action's categorical masked on its own):
every mask source, the refusal of a mask of the wrong length, acting, log-probabilities and entropies,
learning, checkpoints, random actions and PettingZoo envs."""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.agents.agent import Agent
from canter.algorithms.ppo import PPO, PPOConfig
from canter.envs.make import make_env, make_vec_env
from canter.envs.masks import MASKED, MaskedBox, mask_width, split_mask
from canter.envs.packing import ObservationPacker
from canter.errors import CanterError
from support import assert_masks_packed, assert_train_refused
from test_fast_paths import assert_manual_gradients_match_autograd

ENV = "masked_env:FactoredPick-v0"
SOURCES = {"obs": ENV, "info": "masked_env:FactoredPickInfo-v0", "method": "masked_env:FactoredPickMethod-v0"}
NVEC = {"multidiscrete": [3, 4, 2], "multibinary": [2, 2, 2]}
ACTIONS = {"multidiscrete": gym.spaces.MultiDiscrete([3, 4, 2]), "multibinary": gym.spaces.MultiBinary(3)}
D = 4  # observation features before the mask in the hand-made batches


def masked_space(kind: str) -> MaskedBox:
    w = sum(NVEC[kind])
    return MaskedBox(np.r_[-np.ones(D), np.zeros(w)], np.ones(D + w), w)


def factored_obs(kind: str, n: int, seed: int, allow_none_every: int = 0) -> torch.Tensor:
    """``n`` packed observations: ``D`` normal features, then each sub-action's random mask allowing
    1 or more of its choices (every ``allow_none_every``-th row: the first sub-action allows none, which means all)."""
    g = torch.Generator().manual_seed(seed)
    parts = [torch.randn(n, D, generator=g)]
    for j, k in enumerate(NVEC[kind]):
        m = (torch.rand(n, k, generator=g) < 0.4).float()
        m[torch.arange(n), torch.randint(0, k, (n,), generator=g)] = 1.0
        if allow_none_every and j == 0:
            m[::allow_none_every] = 0.0
        parts.append(m)
    return torch.cat(parts, 1)


def assert_allowed(kind: str, obs: torch.Tensor, actions: np.ndarray) -> None:
    """Every sub-action of ``actions`` ``[B, k]`` (algorithm space) is allowed by its row's mask."""
    allowed = split_mask(obs.numpy(), sum(NVEC[kind]), NVEC[kind])[1]
    starts = np.r_[0, np.cumsum(NVEC[kind])[:-1]]
    assert allowed[np.arange(len(obs))[:, None], starts + np.asarray(actions).reshape(len(obs), -1)].all()


# -- sources and refusals ----------------------------------------------------------------------------------
@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("binary", [False, True])
def test_factored_masks_are_packed_from_every_source(source, binary):
    """A mask with the observation, in info or from action_masks(): sum(nvec) (2 * n) entries after the observation."""
    env = make_vec_env(SOURCES[source], 2, env_kwargs={"binary": binary})
    w = 6 if binary else 9
    assert mask_width(env.single_observation_space) == w and env.single_observation_space.shape == (2 * w,)
    assert_masks_packed(env, w, lambda e: e.targets)


@pytest.mark.parametrize("source", list(SOURCES))
def test_a_mask_of_the_wrong_length_is_refused(source):
    """A mask one entry too long, at the first reset: one line with both lengths (it was a shape error
    for the whole observation, which named no mask)."""
    env = make_vec_env(SOURCES[source], 1, env_kwargs={"extra": 1}) if source != "obs" else None
    with pytest.raises(CanterError, match=r"action mask has 10 entries, expected 9 \(sum\(nvec\) of "
                                          r"MultiDiscrete\(\[3, 4, 2\]\)\)$"):
        (env or make_vec_env(ENV, 1, env_kwargs={"extra": 1})).reset(seed=0)
    with pytest.raises(CanterError, match=r"has 5 entries, expected 6 \(2 per entry of MultiBinary\(3\)\)"):
        make_env(SOURCES[source], binary=True, extra=-1).reset(seed=0)


def test_declared_masks_of_the_wrong_length_and_unmaskable_spaces_are_refused(capsys, tmp_path):
    box = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
    space = gym.spaces.Dict({"observation": box, "action_mask": gym.spaces.MultiBinary(8)})
    with pytest.raises(CanterError, match=r"'action_mask' entry MultiBinary\(8\) has 8 entries, expected 9"):
        ObservationPacker(space, ACTIONS["multidiscrete"])
    with pytest.raises(CanterError, match="need a Discrete, MultiDiscrete or MultiBinary action space, not Box"):
        ObservationPacker(space, gym.spaces.Box(-1.0, 1.0, (8,)))
    with pytest.raises(CanterError, match=r"observations' action mask has 9 entries, expected 6"):
        PPO(masked_space("multidiscrete"), ACTIONS["multibinary"], PPOConfig(), seed=0)
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", SOURCES["method"], "--env-kwargs", "{extra: 2}"],
                         "the env's action mask has 11 entries, expected 9")


def test_each_sub_action_that_allows_nothing_allows_everything():
    obs = np.array([[0.5, 0, 0, 0, 1, 0], [0.5, 0, 1, 0, 0, 0]], np.float32)  # 1 feature, nvec [3, 2]
    x, allowed = split_mask(obs, 5, [3, 2])
    np.testing.assert_array_equal(x, obs[:, :1])
    expected = [[True, True, True, True, False], [False, True, False, True, True]]
    np.testing.assert_array_equal(allowed, expected)
    np.testing.assert_array_equal(split_mask(torch.from_numpy(obs), 5, [3, 2])[1].numpy(), expected)
    assert split_mask(obs, 5)[1][0].tolist() == [False, False, False, True, False]  # whole rows without nvec


# -- acting, log-probabilities, entropies and gradients ----------------------------------------------------
@pytest.mark.parametrize("kind", list(NVEC))
def test_masked_sub_actions_are_never_sampled_or_predicted(kind):
    """The head favours choice 0 of every sub-action (logit 50): where that is masked it is never taken."""
    algo = PPO(masked_space(kind), ACTIONS[kind], PPOConfig(net_arch=[16]), seed=0)
    starts = np.r_[0, np.cumsum(NVEC[kind])[:-1]]
    with torch.no_grad():
        algo.model.body.biases[-1][0, 0, starts] = 50.0
    obs = factored_obs(kind, 400, seed=1)
    allowed = split_mask(obs.numpy(), sum(NVEC[kind]), NVEC[kind])[1]
    logits = algo.model.action(obs).detach().numpy()
    assert (logits[~allowed] == MASKED).all() and (logits[allowed] > MASKED / 2).all()
    sampled, greedy = algo.act(obs).actions.numpy(), algo.act(obs, deterministic=True).actions.numpy()
    assert_allowed(kind, obs, sampled)
    assert_allowed(kind, obs, greedy)
    first = allowed[:, starts]  # where choice 0 is allowed, the favoured choice is still the greedy one
    assert (greedy[first] == 0).all() and (greedy[~first] != 0).all()
    agent = Agent(algo)
    env_actions = agent.predict(obs.numpy())
    assert env_actions.shape == (400, 3) and env_actions.dtype == ACTIONS[kind].dtype
    assert_allowed(kind, obs, env_actions)


@pytest.mark.parametrize("kind", list(NVEC))
def test_masked_factored_log_probs_and_entropies_match_a_hand_computation(kind):
    """Each sub-action's softmax over its allowed logits only (a sub-action allowing none: over all),
    log-probabilities and entropies summed over the sub-actions: torch's, the NumPy terms of the
    hand-derived update and the acting log-probabilities all agree with it."""
    algo = PPO(masked_space(kind), ACTIONS[kind], PPOConfig(net_arch=[16], ent_coef=0.01), seed=2)
    obs = factored_obs(kind, 64, seed=3, allow_none_every=5)
    act = algo.act(obs)
    raw = algo.model.action(obs).detach()  # masked logits
    with torch.no_grad():  # the unmasked logits: the model's on the same features without any mask
        free = algo.model.body.forward_group(algo.model.encoder.forward(obs[:, :D]), 0).numpy()
    mask = obs[:, D:].numpy() > 0.5
    actions = act.actions.numpy()
    logp, ent = np.zeros(64), np.zeros(64)
    start = 0
    for j, k in enumerate(NVEC[kind]):
        z, m = free[:, start:start + k].astype(np.float64), mask[:, start:start + k]
        m = m | ~m.any(1, keepdims=True)
        p = np.where(m, np.exp(z - z.max(1, keepdims=True)), 0.0)
        p /= p.sum(1, keepdims=True)
        logp += np.log(p[np.arange(64), actions[:, j]])
        ent -= np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(1)
        start += k
    got_logp, got_ent = algo.log_prob_entropy(raw, act.actions)
    np.testing.assert_allclose(got_logp.detach().numpy(), logp, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_ent.detach().numpy(), ent, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(act.log_probs.detach().numpy(), logp, rtol=1e-5, atol=1e-5)
    terms = algo.policy_terms(raw.numpy(), actions)
    np.testing.assert_allclose(terms.logp, logp, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(terms.entropy, ent, rtol=1e-5, atol=1e-5)
    assert_manual_gradients_match_autograd(algo, obs)


# -- runs ---------------------------------------------------------------------------------------------------
# FactoredPick raises on a masked sub-action, so every run below also shows that no acting path took one.
@pytest.mark.slow
@pytest.mark.parametrize("binary,steps", [(False, 16384), (True, 8192)])
def test_ppo_learns_under_factored_masks(binary, steps, tmp_path):
    """Uniform play over the allowed choices earns about 5.6 of 10 (MultiDiscrete) or 7.5 (MultiBinary)."""
    canter.train("ppo", env=ENV, env_kwargs={"binary": binary}, seed=0, run_dir=str(tmp_path / "run"), quiet=True,
                 eval_every=0, eval_episodes=10, max_steps=steps, n_envs=8, n_steps=64, batch_size=128, n_epochs=4,
                 lr=1e-3)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["last_eval_return"] >= 9.5, summary


def test_factored_masked_run_resumes_loads_and_evaluates(tmp_path, capsys, tiny_ppo):
    """A MultiDiscrete with start 1 (mask entry j of a sub-action: its action 1 + j) through a run, its
    resume, ``canter.load`` and ``canter eval`` (the strict env raises on any masked action)."""
    run = tmp_path / "run"
    kwargs = {"start": 1}
    canter.train("ppo", env=ENV, env_kwargs=kwargs, seed=0, run_dir=str(run), quiet=True, **tiny_ppo)
    canter.resume(run, max_steps=1024)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] >= 1024 and summary["resumes"] == 1
    agent = canter.load(str(run))
    assert isinstance(agent.observation_space, MaskedBox) and agent.observation_space.mask_width == 9
    env = make_env(ENV, **kwargs)
    obs, _ = env.reset(seed=5)
    for _ in range(10):
        action = agent.predict(obs[None])[0]
        assert action.min() >= 1
        obs, *_ = env.step(action)
    from canter.cli import main

    assert main(["eval", str(run), "--episodes", "2", "--json"]) == 0
    assert "mean_return" in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("algo", ["a2c", "recurrent_ppo"])
def test_other_actor_critics_keep_to_factored_masks(algo, tmp_path):
    canter.train(algo, env=ENV, env_kwargs={"binary": algo == "a2c"}, seed=0, run_dir=None, quiet=True,
                 max_steps=512, n_envs=2, eval_every=0, eval_episodes=2)


def test_random_actions_keep_to_factored_masks():
    """A random dataset (canter collect without a policy) and the random opponent of a turn-based game."""
    from canter.data.dataset import collect

    data = collect(ENV, 300, None, seed=1, env_kwargs={"start": 2})
    assert data.actions.shape == (300, 3) and data.actions.min() >= 2
    data = collect(ENV, 300, None, seed=1, env_kwargs={"binary": True})
    assert set(np.unique(data.actions)) == {0, 1}
    pytest.importorskip("pettingzoo")
    env = make_env("pettingzoo:tests.resign_game", factored=True, max_moves=None, resign=False)
    assert mask_width(env.observation_space) == 5
    obs, _ = env.reset(seed=0)
    for _ in range(50):  # the opponent's random moves: the game raises on a masked one
        m = split_mask(obs[None], 5, [2, 3])[1][0]
        obs, *_ = env.step(np.array([np.flatnonzero(m[:2])[0], np.flatnonzero(m[2:])[0]]))


def test_pettingzoo_parallel_env_with_factored_masks(tmp_path):
    """Each agent's mask (3 + 2 entries) is packed after its observation; shared PPO keeps to it."""
    pytest.importorskip("pettingzoo")
    kwargs = {"n_agents": 2, "masked": True, "factored": True}
    env = make_vec_env("pettingzoo:tests.match_agents", 2, env_kwargs=kwargs)
    assert isinstance(env.single_observation_space, MaskedBox) and env.single_observation_space.mask_width == 5
    obs = env.reset(seed=0)
    inner = env.env.envs
    for row, (c, name) in enumerate((c, a) for c in range(2) for a in inner[c].possible_agents):
        np.testing.assert_array_equal(obs[row, -5:], inner[c].masks[name])
    env.close()
    canter.train("ppo", env="pettingzoo:tests.match_agents", env_kwargs=kwargs, seed=0, max_steps=512, n_envs=2,
                 n_steps=64, batch_size=64, run_dir=None, quiet=True, eval_every=0, eval_episodes=2)
