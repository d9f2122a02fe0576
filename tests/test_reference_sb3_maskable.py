"""canter's PPO under invalid-action masks against sb3-contrib's MaskablePPO as a reference.

Same weights, the same masked rollout in both libraries' buffers (canter's observations carry
their masks packed at the end, :mod:`canter.envs.masks`; MaskablePPO's buffer keeps them apart),
one update of three epochs in each, then every gradient, every parameter and the logged
statistics are compared, on the hand-derived and the autograd paths. Both set a disallowed
action's logit to -1e8; MaskablePPO's entropy also counts only allowed actions.
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

D, N_ACTIONS = 4, 5
GAMMA, LAM = 0.98, 0.8


class _Features(gym.Env):
    """The spaces MaskablePPO is built on: ``D`` features, ``N_ACTIONS`` actions (never stepped)."""

    observation_space = gym.spaces.Box(-5.0, 5.0, (D,), np.float32)
    action_space = gym.spaces.Discrete(N_ACTIONS)

    def reset(self, seed=None, options=None):  # noqa: D102
        return np.zeros(D, np.float32), {}

    def step(self, action):  # noqa: D102
        return np.zeros(D, np.float32), 0.0, True, False, {}

    def action_masks(self) -> np.ndarray:  # noqa: D102
        return np.ones(N_ACTIONS, bool)


def _fill_masked_rollouts(algo: PPO, model, n_steps: int, n_envs: int, seed: int):
    """The same masked rollout in both buffers (1-4 allowed actions per row, ~10% terminations,
    rewards in [0.5, 1.5]); returns canter's batch."""
    rng = np.random.default_rng(seed)
    feats = rng.normal(0.0, 1.0, (n_steps + 1, n_envs, D)).astype(np.float32)
    masks = np.zeros((n_steps + 1, n_envs, N_ACTIONS), bool)
    for t in range(n_steps + 1):
        for e in range(n_envs):
            masks[t, e, rng.choice(N_ACTIONS, int(rng.integers(1, 5)), replace=False)] = True
    packed = np.concatenate([feats, masks.astype(np.float32)], -1)
    rewards = rng.uniform(0.5, 1.5, (n_steps, n_envs)).astype(np.float32)
    terminated = (rng.random((n_steps, n_envs)) < 0.1).astype(np.float32)
    ours = RolloutBuffer(n_steps, n_envs, (D + N_ACTIONS,), (), act_dtype=torch.int64)
    theirs = model.rollout_buffer
    theirs.reset()
    no = np.zeros(n_envs)
    for t in range(n_steps):
        with torch.no_grad():
            act = algo.act(torch.from_numpy(packed[t]))
            v_sb3, logp_sb3, _ = model.policy.evaluate_actions(torch.from_numpy(feats[t]), act.actions,
                                                               action_masks=torch.from_numpy(masks[t]))
        assert masks[t][np.arange(n_envs), act.actions.numpy()].all()  # canter sampled allowed actions
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


@pytest.mark.parametrize("n_minibatches", [1, 4])
@pytest.mark.parametrize("manual", [True, False], ids=["manual", "autograd"])
def test_masked_ppo_update_matches_maskable_ppo(n_minibatches, manual, monkeypatch):
    n_steps, n_envs, n_epochs = 32, 4, 3
    n = n_steps * n_envs
    hp = dict(n_steps=n_steps, batch_size=n // n_minibatches, n_epochs=n_epochs, gamma=GAMMA, gae_lambda=LAM,
              clip_range=0.2, normalize_advantage=True, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5)
    lr = 1e-2
    space = MaskedBox(np.r_[np.full(D, -5.0), np.zeros(N_ACTIONS)], np.r_[np.full(D, 5.0), np.ones(N_ACTIONS)],
                      N_ACTIONS)
    torch.manual_seed(0)
    algo = PPO(space, gym.spaces.Discrete(N_ACTIONS), PPOConfig(lr=lr, manual_backward=manual, **hp), seed=0)
    model = MaskablePPO("MlpPolicy", DummyVecEnv([_Features] * n_envs), device="cpu", seed=0, learning_rate=lr, **hp)
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
    assert stats["entropy"] < 0.9 * np.log(N_ACTIONS)  # the entropy of 1-4 allowed actions, not of all 5
