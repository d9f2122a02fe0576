"""A gymnasium-registered env of unusual Box spaces, without rendering (its constructor takes no ``render_mode``):
``unusual_box_env:UnusualBox-v0``.

``gym.make("UnusualBox-v0", act_low=..., act_high=..., act_shape=..., act_dtype=..., obs_shape=..., obs_dtype=...)``;
by default actions in an asymmetric Box (low [-3, 0], high [1, 10]) and float32 observations of shape (3,). ``step``
raises for an action that is not a NumPy array of the space's shape and dtype inside its bounds.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class UnusualBox(gym.Env):
    """Random observations in [-1, 1]; the reward is highest at 3/4 of the way from each action bound to the next
    (1 for an unbounded side); truncated after ``horizon`` steps."""

    def __init__(self, act_low: Any = (-3.0, 0.0), act_high: Any = (1.0, 10.0), act_shape: Any = None,
                 act_dtype: str = "float32", obs_shape: Any = (3,), obs_dtype: str = "float32",
                 horizon: int = 20) -> None:
        dtype = np.dtype(act_dtype)
        if act_shape is None:
            self.action_space = gym.spaces.Box(np.asarray(act_low, dtype), np.asarray(act_high, dtype), dtype=dtype)
        else:
            self.action_space = gym.spaces.Box(float(act_low), float(act_high), tuple(act_shape), dtype)
        self.observation_space = gym.spaces.Box(-1.0, 1.0, tuple(obs_shape), np.dtype(obs_dtype))
        self.horizon, self.t = horizon, 0

    def _obs(self) -> np.ndarray:
        space = self.observation_space
        return self.np_random.uniform(-1, 1, space.shape).astype(space.dtype)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """A random observation."""
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Raises for an action outside the space, or not an array of its shape and dtype."""
        space = self.action_space
        if not (isinstance(action, np.ndarray) and action.dtype == space.dtype and action.shape == space.shape
                and space.contains(action)):
            raise ValueError(f"action {action!r} is not in {space}")
        self.t += 1
        low = np.where(np.isfinite(space.low), space.low, -1.0)
        high = np.where(np.isfinite(space.high), space.high, 1.0)
        scale = np.maximum(1.0, 0.5 * high - 0.5 * low)  # finite for bounds as wide as float64's
        reward = -float(np.mean((action.astype(np.float64) / scale - (0.25 * low + 0.75 * high) / scale) ** 2))
        return self._obs(), reward, False, self.t >= self.horizon, {}


if "UnusualBox-v0" not in gym.registry:
    gym.register("UnusualBox-v0", entry_point=UnusualBox)
