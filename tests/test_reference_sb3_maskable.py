"""canter's PPO under invalid-action masks against sb3-contrib's MaskablePPO as a reference.

Same weights, the same masked rollout in both libraries' buffers (canter's observations carry
their masks packed at the end, :mod:`canter.envs.masks`; MaskablePPO's buffer keeps them apart),
one update of three epochs in each, then every gradient, every parameter and the logged
statistics are compared, on the hand-derived and the autograd paths, for Discrete, MultiDiscrete
and MultiBinary actions (masks of ``sum(nvec)`` / ``2 * n`` entries, each sub-action masked on its
own). Both set a disallowed action's logit to -1e8; MaskablePPO's entropy also counts only allowed
actions.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("sb3_contrib")
pytestmark = pytest.mark.usefixtures("restore_global_rngs")  # SB3's seed= reseeds them process-wide

from sb3_contrib import MaskablePPO  # noqa: E402
from stable_baselines3.common.logger import Logger  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402
from test_reference_sb3_onpolicy import (  # noqa: E402
    _assert_same_grads, _assert_same_params, _copy_weights, _params, _same_minibatches,
)

from canter.algorithms.ppo import PPO, PPOConfig  # noqa: E402
from canter.data.rollout import RolloutBuffer  # noqa: E402
from canter.envs.masks import MaskedBox  # noqa: E402
from canter.envs.spaces import action_nvec  # noqa: E402

D = 4
GAMMA, LAM = 0.98, 0.8
#: the action spaces compared, and each sub-action's choices (a Discrete: one of 5)
ACTION_SPACES = {"discrete": gym.spaces.Discrete(5), "multidiscrete": gym.spaces.MultiDiscrete([3, 2, 4]),
                 "multibinary": gym.spaces.MultiBinary(3)}


def _nvec(space: gym.Space) -> list[int]:
    nvec = action_nvec(space)
    return [int(space.n)] if nvec is None else nvec.tolist()


class _Features(gym.Env):
    """The spaces MaskablePPO is built on: ``D`` features, ``action_space`` (never stepped)."""

    observation_space = gym.spaces.Box(-5.0, 5.0, (D,), np.float32)

    def __init__(self, action_space: gym.Space) -> None:
        self.action_space = action_space

    def reset(self, seed=None, options=None):  # noqa: D102
        return np.zeros(D, np.float32), {}

    def step(self, action):  # noqa: D102
        return np.zeros(D, np.float32), 0.0, True, False, {}

    def action_masks(self) -> np.ndarray:  # noqa: D102
        return np.ones(sum(_nvec(self.action_space)), bool)


def _fill_masked_rollouts(algo: PPO, model, n_steps: int, n_envs: int, seed: int):
    """The same masked rollout in both buffers (1 to all but one of each sub-action's choices allowed per
    row, at least one; ~10% terminations, rewards in [0.5, 1.5]); returns canter's batch."""
    rng = np.random.default_rng(seed)
    nvec = _nvec(algo.action_space)
    feats = rng.normal(0.0, 1.0, (n_steps + 1, n_envs, D)).astype(np.float32)
    masks = np.concatenate([_random_masks(rng, (n_steps + 1, n_envs), k) for k in nvec], -1)
    first = np.cumsum([0] + nvec[:-1])  # each sub-action's first mask entry
    packed = np.concatenate([feats, masks.astype(np.float32)], -1)
    rewards = rng.uniform(0.5, 1.5, (n_steps, n_envs)).astype(np.float32)
    terminated = (rng.random((n_steps, n_envs)) < 0.1).astype(np.float32)
    act_shape = () if isinstance(algo.action_space, gym.spaces.Discrete) else (len(nvec),)
    ours = RolloutBuffer(n_steps, n_envs, (D + masks.shape[-1],), act_shape, act_dtype=torch.int64)
    theirs = model.rollout_buffer
    theirs.reset()
    no = np.zeros(n_envs)
    for t in range(n_steps):
        with torch.no_grad():
            act = algo.act(torch.from_numpy(packed[t]))
            v_sb3, logp_sb3, _ = model.policy.evaluate_actions(torch.from_numpy(feats[t]), act.actions,
                                                               action_masks=torch.from_numpy(masks[t]))
        picked = first + act.actions.numpy().reshape(n_envs, -1)
        assert masks[t][np.arange(n_envs)[:, None], picked].all()  # canter sampled allowed actions
        torch.testing.assert_close(v_sb3.flatten(), act.values, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(logp_sb3, act.log_probs, rtol=1e-5, atol=1e-5)  # over allowed actions
        ours.add(torch.from_numpy(packed[t]), act.actions, act.log_probs, act.values, rewards[t], terminated[t], no,
                 np.ones(n_envs, bool))
        starts = terminated[t - 1] if t > 0 else np.zeros(n_envs, np.float32)
        theirs.add(feats[t], act.actions.numpy(), rewards[t], starts, v_sb3.flatten(), logp_sb3,
                   action_masks=masks[t])
    with torch.no_grad():
        batch = ours.finish(algo.value(torch.from_numpy(packed[n_steps])), GAMMA, LAM)
        theirs.compute_returns_and_advantage(model.policy.predict_values(torch.from_numpy(feats[n_steps])),
                                             terminated[-1].astype(bool))
    return batch


def _random_masks(rng: np.random.Generator, shape: tuple[int, ...], k: int) -> np.ndarray:
    """Masks ``shape + (k,)`` of a ``k``-way choice, each allowing a random 1 to ``k - 1`` choices (of 2: 1 or 2)."""
    masks = np.zeros((*shape, k), bool)
    for idx in np.ndindex(*shape):
        masks[idx][rng.choice(k, int(rng.integers(1, max(3, k))), replace=False)] = True
    return masks


@pytest.mark.parametrize("kind", list(ACTION_SPACES))
@pytest.mark.parametrize("n_minibatches", [1, 4])
@pytest.mark.parametrize("manual", [True, False], ids=["manual", "autograd"])
def test_masked_ppo_update_matches_maskable_ppo(kind, n_minibatches, manual, monkeypatch):
    n_steps, n_envs, n_epochs = 32, 4, 3
    n = n_steps * n_envs
    hp = dict(n_steps=n_steps, batch_size=n // n_minibatches, n_epochs=n_epochs, gamma=GAMMA, gae_lambda=LAM,
              clip_range=0.2, normalize_advantage=True, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5)
    lr = 1e-2
    action_space = ACTION_SPACES[kind]
    nvec = _nvec(action_space)
    w = sum(nvec)
    space = MaskedBox(np.r_[np.full(D, -5.0), np.zeros(w)], np.r_[np.full(D, 5.0), np.ones(w)], w)
    torch.manual_seed(0)
    algo = PPO(space, action_space, PPOConfig(lr=lr, manual_backward=manual, **hp), seed=0)
    model = MaskablePPO("MlpPolicy", DummyVecEnv([lambda: _Features(action_space)] * n_envs), device="cpu", seed=0,
                        learning_rate=lr, **hp)
    model.set_logger(Logger(None, []))
    _copy_weights(algo, model)
    batch = _fill_masked_rollouts(algo, model, n_steps, n_envs, seed=1)
    before = _params(algo, model)
    if n_minibatches > 1:
        _same_minibatches(monkeypatch, algo, n_steps, n_envs)
    stats = algo.learn(batch)
    model.train()
    logged = model.logger.name_to_value
    _assert_same_grads(algo, model)
    _assert_same_params(before, _params(algo, model), atol=5e-6)
    assert 0.0 < stats["clip_fraction"] < 0.5  # the ratio clip acted
    assert stats["policy_loss"] == pytest.approx(logged["train/policy_gradient_loss"], rel=1e-4, abs=1e-6)
    assert stats["value_loss"] == pytest.approx(logged["train/value_loss"], rel=1e-4, abs=1e-6)
    assert stats["entropy"] == pytest.approx(-logged["train/entropy_loss"], rel=1e-5, abs=1e-6)
    assert stats["entropy"] < 0.9 * np.log(nvec).sum()  # the entropy over allowed choices, not over all
