"""Tiny image envs of any size, layout and pixel type, for testing the convolutional encoders
outside Atari (a test helper module, not a test file).

``ImageSide-v0``: at each of ``steps`` steps the image is bright in its left or right half, at
random; with ``continuous=False`` action ``side`` earns 1 (Discrete(2)), with ``continuous=True``
the action ``a`` (one value in [-1, 1]) earns ``-|a - (2 side - 1)|``. Keyword arguments:

- ``shape``: the observation's shape (``[H, W]``, ``[H, W, C]`` or ``[C, H, W]``);
- ``channels_first``: for 3-dimensional shapes, whether the channels come first (else last);
- ``dtype``: ``uint8`` (pixels 0..``high``) or ``float32`` (pixels 0..``high`` too);
- ``low`` / ``high``: the Box bounds (``0`` / ``255`` for uint8 frames, ``0`` / ``1`` for float ones).
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class ImageSideEnv(gym.Env):
    """See the module docstring."""

    def __init__(self, shape: tuple[int, ...] = (36, 36, 1), channels_first: bool = False, dtype: str = "uint8",
                 low: float = 0, high: float | None = None, continuous: bool = False, steps: int = 10,
                 render_mode: str | None = None) -> None:
        self.shape, self.channels_first = tuple(shape), channels_first
        self.dtype = np.dtype(dtype)
        if high is None:
            high = 255 if self.dtype == np.uint8 else 1.0
        self.low, self.high = low, high
        self.observation_space = gym.spaces.Box(low, high, self.shape, self.dtype)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32) if continuous else gym.spaces.Discrete(2)
        self.continuous, self.steps, self.render_mode = continuous, steps, render_mode
        self.side = self.t = 0

    def _width_axis(self) -> int:
        if len(self.shape) == 2:
            return 1
        return 2 if self.channels_first else 1

    def _obs(self) -> np.ndarray:
        image = np.full(self.shape, self.low, self.dtype)
        axis = self._width_axis()
        half = self.shape[axis] // 2
        index = [slice(None)] * len(self.shape)
        index[axis] = slice(half * self.side, half * (self.side + 1))
        image[tuple(index)] = self.high
        return image

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        self.side = int(self.np_random.integers(0, 2))
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self.continuous:
            reward = -abs(float(np.asarray(action).reshape(-1)[0]) - (2.0 * self.side - 1.0))
        else:
            reward = float(int(action) == self.side)
        self.t += 1
        self.side = int(self.np_random.integers(0, 2))
        return self._obs(), reward, False, self.t >= self.steps, {}

    def render(self) -> np.ndarray | None:
        """The observation as an RGB frame (``rgb_array``)."""
        if self.render_mode != "rgb_array":
            return None
        img = self._obs().astype(np.float32)
        if len(self.shape) == 3 and self.channels_first:
            img = img.transpose(1, 2, 0)
        if img.ndim == 2:
            img = img[:, :, None]
        img = img[:, :, :1] if img.shape[2] != 3 else img
        img = np.broadcast_to(img, img.shape[:2] + (3,))
        return (255 * (img - self.low) / max(self.high - self.low, 1e-9)).astype(np.uint8)


if "ImageSide-v0" not in gym.registry:
    gym.register("ImageSide-v0", entry_point=ImageSideEnv, disable_env_checker=True)


class DictImageSideEnv(ImageSideEnv):
    """``DictImageSide-v0``: :class:`ImageSideEnv`'s image under ``"image"`` beside a ``"vec"`` entry (a float
    Box of 3 values in [-1, 1], noise the task does not need)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.image_space = self.observation_space
        self.observation_space = gym.spaces.Dict({
            "image": self.image_space, "vec": gym.spaces.Box(-1.0, 1.0, (3,), np.float32)})

    def _obs(self) -> Any:
        return {"image": super()._obs(), "vec": self.np_random.uniform(-1, 1, 3).astype(np.float32)}

    def render(self) -> np.ndarray | None:  # noqa: D102
        return None


if "DictImageSide-v0" not in gym.registry:
    gym.register("DictImageSide-v0", entry_point=DictImageSideEnv, disable_env_checker=True)


class MarkedDictImageSideEnv(DictImageSideEnv):
    """``MarkedDictImageSide-v0``: :class:`DictImageSideEnv` of a channels-first ``[12, 10, 10]`` image (RGB stacks
    of a small screen, which the shape rule reads as channels-last) whose env marks its ``"image"`` entry
    :attr:`layout` (``canter.models.cnn.mark_image_layout``), as the Atari envs mark their stacks; None: unmarked."""

    layout: str | None = "chw"

    def __init__(self, **kwargs: Any) -> None:
        from canter.models.cnn import mark_image_layout

        super().__init__(**{"shape": (12, 10, 10), "channels_first": True, **kwargs})
        if self.layout is not None:
            mark_image_layout(self.image_space, self.layout)


if "MarkedDictImageSide-v0" not in gym.registry:
    gym.register("MarkedDictImageSide-v0", entry_point=MarkedDictImageSideEnv, disable_env_checker=True)


def stacked_image_side(frames: int = 4, render_mode: str | None = None, **kwargs: Any) -> gym.Env:
    """``StackedImageSide-v0``: :class:`ImageSideEnv` (its keyword arguments) under gymnasium's
    ``FrameStackObservation``: observations ``[frames, *shape]``, such as ``[4, 36, 36, 3]``."""
    return gym.wrappers.FrameStackObservation(ImageSideEnv(render_mode=render_mode, **kwargs), frames)


if "StackedImageSide-v0" not in gym.registry:
    gym.register("StackedImageSide-v0", entry_point=stacked_image_side, disable_env_checker=True)
