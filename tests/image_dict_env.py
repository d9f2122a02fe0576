"""Envs whose observations hold images (and vectors), and whose tasks need them.

``DictImageCue-v0``: at each of 10 steps the image (36 x 36, one channel) is bright in its left or
right half, at random, and ``flip`` is 0 or 1, at random; action ``side XOR flip`` earns 1,
the other 0. A policy that sees only one of the two entries earns 5 per episode on average, one
that reads both 10. ``float_flip=True`` gives ``flip`` as a float Box (-1 or 1) instead of a
``Discrete(2)``, so the packed observations are float32 rather than uint8.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

SIZE, STEPS = 36, 10


class ImageCueEnv(gym.Env):
    """See the module docstring."""

    def __init__(self, float_flip: bool = False, render_mode: str | None = None) -> None:
        flip = gym.spaces.Box(-1.0, 1.0, (1,), np.float32) if float_flip else gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Dict({
            "image": gym.spaces.Box(0, 255, (SIZE, SIZE, 1), np.uint8), "flip": flip})
        self.action_space = gym.spaces.Discrete(2)
        self.float_flip, self.render_mode = float_flip, render_mode
        self.side = self.flip = self.t = 0

    def _obs(self) -> dict[str, Any]:
        image = np.zeros((SIZE, SIZE, 1), np.uint8)
        half = SIZE // 2
        image[:, half * self.side: half * (self.side + 1)] = 255
        flip = np.array([2.0 * self.flip - 1.0], np.float32) if self.float_flip else self.flip
        return {"image": image, "flip": flip}

    def _draw(self) -> None:
        self.side, self.flip = (int(v) for v in self.np_random.integers(0, 2, 2))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        self._draw()
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        reward = float(int(action) == self.side ^ self.flip)
        self.t += 1
        self._draw()
        return self._obs(), reward, False, self.t >= STEPS, {}


class ImageReachEnv(gym.Env):
    """``ImageReach-v0``: continuous actions from images. At each of 10 steps the image (36 x 36,
    one channel) has one bright column ``c``, at random; the target is ``x = 2 c / 35 - 1`` in
    [-1, 1] and the action ``a`` (one value in [-1, 1]) earns ``-|a - x|``. Acting 0 earns about
    -5 per episode, reading the image 0. ``dict_obs=True`` observes ``{"image", "offset"}`` with
    ``offset`` in [-1, 1] at random, and the target becomes ``(x + offset) / 2``."""

    def __init__(self, dict_obs: bool = False, render_mode: str | None = None) -> None:
        image = gym.spaces.Box(0, 255, (SIZE, SIZE, 1), np.uint8)
        self.observation_space = gym.spaces.Dict({
            "image": image, "offset": gym.spaces.Box(-1.0, 1.0, (1,), np.float32)}) if dict_obs else image
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.dict_obs, self.render_mode = dict_obs, render_mode
        self.column, self.offset, self.t = 0, 0.0, 0

    def _draw(self) -> Any:
        self.column = int(self.np_random.integers(0, SIZE))
        self.offset = float(self.np_random.uniform(-1.0, 1.0)) if self.dict_obs else 0.0
        image = np.zeros((SIZE, SIZE, 1), np.uint8)
        image[:, self.column] = 255
        return {"image": image, "offset": np.array([self.offset], np.float32)} if self.dict_obs else image

    def target(self) -> float:
        """Where the action should be."""
        x = 2.0 * self.column / (SIZE - 1) - 1.0
        return (x + self.offset) / 2 if self.dict_obs else x

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return self._draw(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        reward = -abs(float(np.asarray(action).reshape(-1)[0]) - self.target())
        self.t += 1
        return self._draw(), reward, False, self.t >= STEPS, {}


if "ImageReach-v0" not in gym.registry:
    gym.register("ImageReach-v0", entry_point=ImageReachEnv, disable_env_checker=True)
if "DictImageCue-v0" not in gym.registry:
    gym.register("DictImageCue-v0", entry_point=ImageCueEnv, disable_env_checker=True)
