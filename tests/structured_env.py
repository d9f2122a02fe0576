"""Toy envs of structured observations for tests: ``structured_env:NestedPick-v0``, a Dict with a Discrete entry
that starts at -2, a Box and a nested Dict, and ``structured_env:CodePick-v0``, a MultiDiscrete observation
(with ``start``). Each step shows a target in ``Discrete(3)`` (in ``pos`` + 2; in the first code - 1); picking it
earns 1; 10 steps per episode."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class NestedPick(gym.Env):
    """``{"pos": Discrete(3, start=-2), "box": Box(2), "inner": {"k": Discrete(4), "v": Box(3)}}``."""

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        inner = gym.spaces.Dict({"k": gym.spaces.Discrete(4), "v": gym.spaces.Box(0.0, 1.0, (3,), np.float32)})
        self.observation_space = gym.spaces.Dict({"pos": gym.spaces.Discrete(3, start=-2),
                                                  "box": gym.spaces.Box(-1.0, 1.0, (2,), np.float32), "inner": inner})
        self.action_space = gym.spaces.Discrete(3)

    def _obs(self) -> dict[str, Any]:
        self.target = int(self.np_random.integers(3))
        return {"pos": self.target - 2, "box": self.np_random.uniform(-1, 1, 2).astype(np.float32),
                "inner": {"k": int(self.np_random.integers(4)), "v": self.np_random.random(3).astype(np.float32)}}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:  # noqa: D102
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:  # noqa: D102
        reward = float(int(action) == self.target)
        self.t += 1
        return self._obs(), reward, self.t >= 10, False, {}


class CodePick(NestedPick):
    """A ``MultiDiscrete([3, 4], start=[1, 0])`` observation: the target + 1, then noise."""

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(render_mode)
        self.observation_space = gym.spaces.MultiDiscrete([3, 4], start=[1, 0])

    def _obs(self) -> np.ndarray:
        self.target = int(self.np_random.integers(3))
        return np.array([self.target + 1, self.np_random.integers(4)], np.int64)


if "NestedPick-v0" not in gym.registry:
    gym.register("NestedPick-v0", entry_point=NestedPick, disable_env_checker=True)
    gym.register("CodePick-v0", entry_point=CodePick, disable_env_checker=True)
