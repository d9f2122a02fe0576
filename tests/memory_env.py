"""A memory task for recurrent policies: ``memory_env:Cue-v0``.

The first observation shows a cue (one of ``n`` one-hot), the next ``delay`` observations show
nothing, and the last asks (a query flag): the action then earns +1 if it names the cue, -1
otherwise (actions before the query earn 0). A policy without memory wins half the time with
``n = 2`` (mean return 0); one that remembers the cue earns 1.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class Cue(gym.Env):
    """Remember the first observation's cue until the query."""

    def __init__(self, n: int = 2, delay: int = 4, render_mode: str | None = None) -> None:
        self.n, self.delay, self.render_mode = n, delay, render_mode
        self.observation_space = gym.spaces.Box(0.0, 1.0, (n + 1,), np.float32)
        self.action_space = gym.spaces.Discrete(n)

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.n + 1, np.float32)
        if self.t == 0:
            obs[self.cue] = 1.0
        elif self.t == self.delay + 1:
            obs[self.n] = 1.0  # the query
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:  # noqa: D102
        super().reset(seed=seed)
        self.t, self.cue = 0, int(self.np_random.integers(self.n))
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:  # noqa: D102
        if self.t == self.delay + 1:
            return self._obs(), 1.0 if int(action) == self.cue else -1.0, True, False, {}
        self.t += 1
        return self._obs(), 0.0, False, False, {}


if "Cue-v0" not in gym.registry:
    gym.register("Cue-v0", entry_point=Cue, disable_env_checker=True)


class ImageCue(gym.Env):
    """The cue as an image: the first 64 x 64 grey frame is bright in its top half (cue 1) or dim all
    over (cue 0), the next ``delay`` frames are black, then the action must name the cue (+1 / -1)."""

    observation_space = gym.spaces.Box(0, 255, (64, 64, 1), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, delay: int = 2, render_mode: str | None = None) -> None:
        self.delay, self.render_mode = delay, render_mode

    def _obs(self) -> np.ndarray:
        frame = np.zeros((64, 64, 1), np.uint8)
        if self.t == 0:
            frame[:32 if self.cue else 64] = 255 if self.cue else 128
        return frame

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:  # noqa: D102
        super().reset(seed=seed)
        self.t, self.cue = 0, int(self.np_random.integers(2))
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:  # noqa: D102
        self.t += 1
        if self.t > self.delay:
            return self._obs(), 1.0 if int(action) == self.cue else -1.0, True, False, {}
        return self._obs(), 0.0, False, False, {}


if "ImageCue-v0" not in gym.registry:
    gym.register("ImageCue-v0", entry_point=ImageCue, disable_env_checker=True)
