"""Structured observations (``Dict``, ``Tuple``) as one flat float32 vector per observation.

canter's buffers, datasets and networks take arrays. An env whose observations are a ``Dict`` or
``Tuple`` of vectors (``Box``, ``Discrete`` one-hot, ``MultiBinary``, ``MultiDiscrete`` one-hot per
entry, nested) is wrapped by :class:`PackObservations`, which flattens each observation with
gymnasium's ``spaces.flatten`` into a float32 ``Box`` (what Stable-Baselines3's
``MultiInputPolicy`` does for non-image entries). A ``Dict`` in the action-mask convention
(:mod:`canter.envs.masks`) keeps its mask apart: the other entries flattened, then the mask, in a
:class:`~canter.envs.masks.MaskedBox`. Image entries (``uint8`` arrays of shape ``[H, W, C]``) are
refused: flattened they would reach a fully connected network pixel by pixel.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from canter.envs.masks import MASK_KEY, OBS_KEY, MaskedBox, has_action_mask
from canter.errors import CanterError

STRUCTURED = (gym.spaces.Dict, gym.spaces.Tuple)


def needs_packing(space: gym.Space) -> bool:
    """True for observation spaces that :class:`ObservationPacker` turns into vectors."""
    return isinstance(space, STRUCTURED)


def _check_entries(space: gym.Space, where: str) -> None:
    """Refuse entries that do not flatten into a feature vector (images, text, graphs...)."""
    from canter.models.cnn import is_image_space

    if isinstance(space, gym.spaces.Dict):
        for key, sub in space.spaces.items():
            _check_entries(sub, f"{where}.{key}" if where else str(key))
    elif isinstance(space, gym.spaces.Tuple):
        for i, sub in enumerate(space.spaces):
            _check_entries(sub, f"{where}[{i}]")
    elif is_image_space(space):
        raise CanterError(f"observation entry '{where}' is an image {space}: canter flattens Dict and Tuple "
                          f"observations into one vector, so give the image on its own (a Box observation)")
    elif not isinstance(space, (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiBinary, gym.spaces.MultiDiscrete)):
        raise CanterError(f"observation entry '{where}' is a {type(space).__name__} space, which canter cannot "
                          f"flatten into a vector (Box, Discrete, MultiBinary and MultiDiscrete entries can)")


class ObservationPacker:
    """Flattens observations of a ``Dict`` / ``Tuple`` space into float32 vectors of :attr:`space`
    (a :class:`~canter.envs.masks.MaskedBox` when the space follows the action-mask convention)."""

    #: configuration only: an env's snapshot for exact resume (:mod:`canter.envs.state`) skips it
    resume_stateless = True

    def __init__(self, space: gym.Space, action_space: gym.Space) -> None:
        self.mask = has_action_mask(space)
        if self.mask:
            if not isinstance(action_space, gym.spaces.Discrete):
                raise CanterError(f"action masks need a Discrete action space, not {type(action_space).__name__}")
            rest = {k: v for k, v in space.spaces.items() if k != MASK_KEY}
            mask = space[MASK_KEY]
            width = int(np.prod(getattr(mask, "shape", ()) or (0,)))
            if not isinstance(mask, (gym.spaces.Box, gym.spaces.MultiBinary)) or width != int(action_space.n):
                raise CanterError(f"the '{MASK_KEY}' entry must hold one 0/1 value per action "
                                  f"({int(action_space.n)}), got {mask}")
            # the usual single 'observation' entry is flattened on its own (the same layout as before)
            self._inner = rest[OBS_KEY] if set(rest) == {OBS_KEY} else gym.spaces.Dict(rest)
        else:
            self._inner, width = space, 0
        _check_entries(self._inner, OBS_KEY if self.mask and not isinstance(self._inner, gym.spaces.Dict) else "")
        flat = gym.spaces.flatten_space(self._inner)
        low, high = np.asarray(flat.low, np.float64), np.asarray(flat.high, np.float64)
        if self.mask:
            self.space: gym.spaces.Box = MaskedBox(np.r_[low, np.zeros(width)], np.r_[high, np.ones(width)], width)
        else:
            self.space = gym.spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)

    def __call__(self, observation: Any) -> np.ndarray:
        """The flat float32 vector of one observation."""
        if not self.mask:
            return np.asarray(gym.spaces.flatten(self._inner, observation), np.float32)
        rest = observation[OBS_KEY] if not isinstance(self._inner, gym.spaces.Dict) else \
            {k: v for k, v in observation.items() if k != MASK_KEY}
        x = np.asarray(gym.spaces.flatten(self._inner, rest), np.float32)
        return np.concatenate([x, np.asarray(observation[MASK_KEY], np.float32).reshape(-1)])


class PackObservations(gym.ObservationWrapper):
    """An env with structured observations, each flattened by an :class:`ObservationPacker`."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._pack = ObservationPacker(env.observation_space, env.action_space)
        self.observation_space = self._pack.space

    def observation(self, observation: Any) -> np.ndarray:  # noqa: D102
        return self._pack(observation)


def pack_observations(env: gym.Env) -> gym.Env:
    """``env`` wrapped in :class:`PackObservations` when its observations are structured, else ``env``."""
    return PackObservations(env) if needs_packing(env.observation_space) else env
