"""Small pieces shared by several test files (not a test module itself)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np

from canter.trainers.evaluation import EvalResult


class Box22Actions(gym.Env):
    """Actions of shape (2, 2); the reward is highest at 0.5 everywhere; truncated after 20 steps."""

    observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
    action_space = gym.spaces.Box(-1, 1, (2, 2), np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        assert action.shape == (2, 2), action.shape
        self.t += 1
        return np.zeros(3, np.float32), -float(np.sum((action - 0.5) ** 2)), False, self.t >= 20, {}


class ScalarAction(Box22Actions):
    """A scalar Box action (shape ``()``, bounds -2 and 3): the env asserts the shape on every step."""

    action_space = gym.spaces.Box(-2, 3, (), np.float32)

    def step(self, action):
        assert np.shape(action) == () and -2 <= action <= 3, action
        self.t += 1
        return np.zeros(3, np.float32), -float((action - 0.5) ** 2), False, self.t >= 20, {}


def scripted(trainer, returns: list[float]) -> list[float]:
    """Replace the trainer's evaluation by a scripted sequence of mean returns; returns the log."""
    seen: list[float] = []

    def evaluate():
        value = returns[len(seen)]
        seen.append(value)
        trainer.evaluations += 1
        return EvalResult(value, 0.0, [value], [1])

    trainer.evaluate = evaluate
    return seen
