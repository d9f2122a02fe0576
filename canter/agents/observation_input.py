"""The observations an :class:`~canter.agents.Agent` acts on, as callers give them: one or a batch, NumPy arrays,
nested lists or torch tensors, raw Dict / Tuple / MultiDiscrete observations packed as training packed them, in the
observation space's dtype; anything else is a one-line :class:`~canter.errors.CanterError` naming the shapes."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from canter.envs.packing import packed_layout
from canter.envs.raw_observations import binary_values, is_raw, pack_raw
from canter.errors import CanterError


class ObservationInput:
    """What :class:`~canter.agents.Agent` makes of the observations given to ``predict``, ``explore`` and the
    recurrent agent's calls (:meth:`as_batch`), from its ``observation_space``."""

    observation_space: gym.Space

    def as_batch(self, obs: Any) -> tuple[np.ndarray, bool]:
        """``obs`` (NumPy array, nested list or torch tensor) as a NumPy batch ``[B, *shape]``, and
        whether it was one observation (the observation space's shape, as ``env.reset()`` of a single
        env returns it) rather than a batch. Anything else is a :class:`CanterError` naming the shapes.
        Where the space packs a Dict / Tuple / MultiDiscrete observation (its ``packed_layout``), raw ones
        (one, a dict of ``[B, ...]`` entries, a list) are packed as training did (:mod:`canter.envs.raw_observations`)."""
        if isinstance(obs, torch.Tensor):
            obs = obs.detach().cpu().numpy()
        if is_raw(self.observation_space, obs):
            return pack_raw(self.observation_space, obs)
        shape = self.observation_space.shape
        try:
            x = np.asarray(obs)
        except (ValueError, TypeError):  # ragged: a Tuple observation's entries of different lengths
            x = np.asarray(None)
        if x.dtype.kind not in "biuf":  # object (dicts, tuples, None), strings, complex numbers
            from canter.envs.packing import packing_hint

            hint = packing_hint(self.observation_space, True) if x.dtype == object else f", got {x.dtype} values"
            if isinstance(obs, tuple) and len(obs) == 2 and isinstance(obs[1], dict):  # gymnasium's, not SB3's reset
                hint = ("; got a pair ending in a dict, as env.reset() returns (obs, info): pass the observation "
                        "alone (obs, info = env.reset())")
            raise CanterError(f"observations must be numeric arrays of shape {shape} (one) or (B, *{shape}) "
                              f"(a batch){hint}")
        if x.shape == shape:
            single = True
        elif x.shape[1:] == shape:
            single = False
        else:
            from canter.envs.packing import packing_hint

            # a Tuple of Discretes (Blackjack's (11, 10, 0)) or a MultiDiscrete observation: whole numbers that
            # the env copies' wrapper one-hots, so the model's vector is longer
            guess = isinstance(obs, (tuple, dict)) or (x.dtype.kind in "biu" and len(shape) == 1)
            hint = packing_hint(self.observation_space, guess)
            raise CanterError(f"expected one observation of shape {shape} or a batch of shape "
                              f"{(-1, *shape)}, got an array of shape {x.shape}{hint}")
        if isinstance(self.observation_space, gym.spaces.Discrete):
            self._check_discrete(x)
        self._check_binary(x)
        if x.dtype != self.observation_space.dtype:
            x = self._in_space_dtype(x)
        return (x[None] if single else x), single

    def _in_space_dtype(self, x: np.ndarray) -> np.ndarray:
        """``x`` in the observation space's dtype, as the env gives observations and the model trains on them:
        a float Box's values and Discrete indices (checked whole) converted (a list is float64, which a user's
        model, unlike canter's encoders, may not take), image pixels checked (:meth:`_as_image_pixels`)."""
        space = self.observation_space
        if isinstance(space, gym.spaces.Discrete) or (
                isinstance(space, gym.spaces.Box) and np.issubdtype(space.dtype, np.floating)):
            return x.astype(space.dtype)
        return self._as_image_pixels(x)

    def _check_discrete(self, x: np.ndarray) -> None:
        """A :class:`CanterError` unless every entry of ``x`` is one of the Discrete observation space's
        values (the models one-hot them: another value is torch's error, a fraction is truncated)."""
        space = self.observation_space
        low, high = int(space.start), int(space.start) + int(space.n) - 1
        if x.size and not (np.array_equal(np.floor(x), x) and x.min() >= low and x.max() <= high):
            got = x.min() if x.min() == x.max() else f"values {x.min()}..{x.max()}"
            raise CanterError(f"Discrete observations are integers {low}..{high}, got {got}")

    def _check_binary(self, x: np.ndarray) -> None:
        """A :class:`CanterError` unless every entry of ``x`` is 0 or 1 where the space packs a MultiBinary
        observation alone: its packed vector has the observation's own shape, so a 2 (or 0.5) went to the model
        unchecked, where a MultiDiscrete or Discrete value out of range is refused."""
        layout = packed_layout(self.observation_space)
        if layout and len(layout) == 1 and not layout[0].get("path") and layout[0].get("kind") == "MultiBinary":
            binary_values(layout[0], x)

    def _as_image_pixels(self, x: np.ndarray) -> np.ndarray:
        """``x`` as uint8 when the observations are images (:func:`~canter.models.cnn.image_pixels`)."""
        from canter.models.cnn import image_pixels

        return image_pixels(x, self.observation_space)
