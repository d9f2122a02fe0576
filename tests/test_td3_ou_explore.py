"""TD3/DDPG with Ornstein-Uhlenbeck action noise: ``Agent.explore`` (stochastic evaluation, ``eval_deterministic:
false``; a frozen opponent) restarted every call from the training envs' frozen OU state, so its actions were
``mu(s)`` plus a constant offset and a small jitter (Pendulum, noise_std 0.5: explore - predict over 200 calls had
mean 0.78, std 0.10). It now gives ``mu(s)``, as Stable-Baselines3's ``predict(deterministic=False)`` does."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import canter

TINY = {"max_steps": 200, "learning_starts": 50, "batch_size": 16, "net_arch": [16], "seed": 0}


@pytest.mark.parametrize("algo", ["td3", "ddpg"])
def test_ou_explore_is_the_policy_and_leaves_the_training_noise(algo):
    trainer = canter.make_trainer(algo, "Pendulum-v1", action_noise="ou", noise_std=0.5, **TINY)
    agent, alg = trainer.agent, trainer.algorithm
    alg.ou_state = torch.full((1, 1), 0.4)  # the training env's process, mid-episode
    obs = np.array([0.5, 0.5, 0.1], np.float32)
    draws = np.array([agent.explore(obs) for _ in range(20)])
    assert np.array_equal(draws, np.repeat(agent.predict(obs)[None], 20, 0))
    assert torch.equal(alg.ou_state, torch.full((1, 1), 0.4))
    trainer.close()


def test_gaussian_explore_still_samples():
    trainer = canter.make_trainer("td3", "Pendulum-v1", action_noise="normal", noise_std=0.5, **TINY)
    obs = np.array([0.5, 0.5, 0.1], np.float32)
    draws = np.array([trainer.agent.explore(obs) for _ in range(20)])
    assert draws.std() > 0.1
    trainer.close()
