"""Periodic evaluation leaves the global random streams (Python's ``random``, NumPy's legacy ``np.random``, torch's)
where training had them: with an env that draws its noise from them, a run with evaluations trains exactly as the
same run without."""
import random

import gymnasium as gym
import numpy as np
import torch

import canter


class GlobalNoiseEnv(gym.Env):
    """A 20-step episode whose observations are noise from the global streams (as an env of ``random`` or
    ``np.random.rand`` calls has): nothing of it follows ``reset(seed=...)``."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def _obs(self):
        return np.array([random.random(), np.random.random(), float(torch.rand(1))], dtype=np.float32)

    def reset(self, *, seed=None, options=None):  # noqa: D102
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):  # noqa: D102
        self.t += 1
        obs = self._obs()
        return obs, float(obs[0] > 0.5) + float(action), False, self.t >= 20, {}


gym.register("GlobalNoise-v0", entry_point=GlobalNoiseEnv)


def _training(eval_every):
    trainer = canter.make_trainer("ppo", "GlobalNoise-v0", seed=3, max_steps=256, n_envs=2, n_steps=32, batch_size=32,
                                  n_epochs=1, eval_every=eval_every, eval_episodes=2)
    with trainer:
        returns = [e.episode_return for rec in trainer() for e in rec.episodes]
    return returns, torch.cat([p.detach().flatten() for p in trainer.algorithm.model.parameters()])


def test_evaluations_do_not_move_the_training_streams():
    (plain, plain_weights), (evaluated, evaluated_weights) = _training(0), _training(64)
    assert len(plain) > 10 and evaluated == plain
    assert torch.equal(evaluated_weights, plain_weights)
