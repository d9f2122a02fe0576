"""Envs whose observation counts the episode's steps, for tests of what a truncated episode bootstraps from:
``StepCount-v0`` observes ``[t]`` (0 at reset), earns 1 a step and is truncated after ``limit`` steps (default 4),
so its final observation, ``[limit]``, differs from the next episode's first, ``[0]``, and a transition's next
observation is its own plus the steps it spans; ``GoalCount-v0`` is the same as a goal env (``observation`` and
``achieved_goal`` ``[t]``, ``desired_goal`` ``[9]``, never reached), for hindsight replay."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class StepCount(gym.Env):
    """See the module docstring; ``act``: ``discrete`` (Discrete(2)) or ``box`` (Box(-1, 1, (1,)))."""

    def __init__(self, limit: int = 4, act: str = "discrete", render_mode: str | None = None) -> None:
        self.observation_space = gym.spaces.Box(0.0, 100.0, (1,), np.float32)
        self.action_space = (gym.spaces.Discrete(2) if act == "discrete"
                             else gym.spaces.Box(-1.0, 1.0, (1,), np.float32))
        self.limit, self.render_mode, self.t = limit, render_mode, 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        return np.array([self.t], np.float32), 1.0, False, self.t >= self.limit, {}


class GoalCount(gym.Env):
    """See the module docstring."""

    def __init__(self, limit: int = 4, render_mode: str | None = None) -> None:
        box = gym.spaces.Box(0.0, 100.0, (1,), np.float32)
        self.observation_space = gym.spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = gym.spaces.Discrete(2)
        self.limit, self.render_mode, self.t = limit, render_mode, 0

    def _obs(self) -> dict[str, np.ndarray]:
        t = np.array([self.t], np.float32)
        return {"observation": t, "achieved_goal": t.copy(), "desired_goal": np.array([9.0], np.float32)}

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        """0 where the goal is reached, else -1 (on batches too)."""
        return -(np.abs(np.asarray(achieved_goal) - np.asarray(desired_goal)).sum(-1) > 0.5).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        return self._obs(), -1.0, False, self.t >= self.limit, {}


if "StepCount-v0" not in gym.registry:
    gym.register("StepCount-v0", entry_point=StepCount, disable_env_checker=True)
    gym.register("GoalCount-v0", entry_point=GoalCount, disable_env_checker=True)
