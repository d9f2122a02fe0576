"""RGB Atari frames (``env_kwargs: {grayscale: false}``) as channels of the stack, on both Atari paths.

gymnasium's ``FrameStackObservation`` around ``AtariPreprocessing(grayscale_obs=False)`` and ale-py's native
``AtariVectorEnv(grayscale=False)`` both give a stack of ``[frame_stack, height, width, 3]`` frames; the convolutional
encoders take ``[channels, height, width]``. So the stack becomes ``uint8 [3 * frame_stack, height, width]``, frame
by frame with each frame's red, green and blue planes together (channel ``3 * i + c`` is colour ``c`` of the stack's
frame ``i``, oldest first), which is what Stable-Baselines3's ``VecFrameStack`` (channels last) +
``VecTransposeImage`` and EnvPool's ``gray_scale=False`` give. The frame-once replay buffer stores one
``[3, height, width]`` frame per row (:class:`canter.data.framestack.FrameStackMixin`'s ``frame_channels``).
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


def channels_first(stacks: np.ndarray) -> np.ndarray:
    """``[..., S, H, W, C]`` stacks as ``[..., S * C, H, W]`` (frame-major: channel ``C * i + c``)."""
    *lead, s, h, w, c = stacks.shape
    moved = np.moveaxis(stacks, -1, -3)  # [..., S, C, H, W]
    return np.ascontiguousarray(moved).reshape(*lead, s * c, h, w)


def _space(space: gym.spaces.Box) -> gym.spaces.Box:
    s, h, w, c = space.shape
    return gym.spaces.Box(0, 255, (s * c, h, w), np.uint8)


class StackedRGB(gym.ObservationWrapper):
    """The wrapper path: ``FrameStackObservation``'s ``[S, H, W, 3]`` RGB stacks as ``[3 * S, H, W]``."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = _space(env.observation_space)

    def observation(self, observation: Any) -> np.ndarray:  # noqa: D102
        return channels_first(np.asarray(observation))


class NativeStackedRGB(gym.vector.VectorObservationWrapper):
    """ale-py's native vector env: its ``[n, S, H, W, 3]`` RGB stacks as ``[n, 3 * S, H, W]``. Outermost, so the
    wrappers inside it (:class:`~canter.envs.atari_native.NativeNewLifeStack`) still see whole frames."""

    def __init__(self, env: gym.vector.VectorEnv) -> None:
        super().__init__(env)
        self.single_observation_space = _space(env.single_observation_space)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, env.num_envs)

    def observations(self, observations: Any) -> np.ndarray:  # noqa: D102
        return channels_first(np.asarray(observations))


def frame_channels(env_id: str, env_kwargs: dict[str, Any] | None) -> int:
    """What the off-policy trainers' ``frame_stack`` takes (:func:`canter.trainers.off_policy.make_replay_buffer`):
    the channels of each stacked frame of an ALE id's observations (1, or 3 with ``grayscale: false``), so the
    replay buffer stores each frame once; 0 for other envs (whole observations stored)."""
    from canter.ale import is_atari
    from canter.envs.atari_kwargs import preprocessing

    return preprocessing(env_id, env_kwargs).channels if is_atari(env_id) else 0
