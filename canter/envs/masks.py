"""Invalid-action masks: envs whose observations say which actions are allowed.

An env with a ``Dict`` observation space holding ``"observation"`` and ``"action_mask"`` (the
PettingZoo convention; ``action_mask[a]`` is 1 where action ``a`` is allowed) is wrapped by
:class:`PackActionMask`: each observation becomes one flat float32 vector, the observation's
values followed by the mask, in a :class:`MaskedBox` space that records the mask's width. So
vector envs, rollout and replay buffers, datasets and explorers store masks with the
observations they belong to, without knowing about them, and a checkpoint's observation space
says that its policy acts under masks.

The models split the mask off again (:func:`split_mask`): the networks see only the
observation, and the policy's logits (or the Q values used to pick and bootstrap actions) of
masked actions are replaced by :data:`MASKED` (:func:`apply_mask`), so sampling, the greedy
action, log-probabilities, entropies and TD targets all range over the allowed actions only.
A row whose mask allows nothing (a final observation, where some envs clear the mask) is
treated as unmasked.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from canter.errors import CanterError

#: what a masked action's logit or Q value becomes: exp() of it is exactly 0 in float32, and it
#: stays finite, so ``p * log p`` terms are 0 rather than NaN (SB3-contrib's MaskablePPO uses the same)
MASKED = -1e8
OBS_KEY, MASK_KEY = "observation", "action_mask"


class MaskedBox(gym.spaces.Box):
    """A float32 Box whose last ``mask_width`` entries along its last axis are an action mask (0 or
    1): a flat vector for one agent, or one mask per row of a joint observation (QMIX)."""

    def __init__(self, low: np.ndarray, high: np.ndarray, mask_width: int, seed: Any = None) -> None:
        super().__init__(low=np.asarray(low, np.float32), high=np.asarray(high, np.float32), dtype=np.float32, seed=seed)
        self.mask_width = int(mask_width)

    def observation_space(self) -> gym.spaces.Box:
        """The space of the observation part (the entries before the mask)."""
        k = self.mask_width
        return gym.spaces.Box(self.low[..., :-k], self.high[..., :-k], dtype=np.float32)

    def __repr__(self) -> str:
        return f"MaskedBox({self.observation_space().shape} + mask of {self.mask_width})"


def mask_width(space: gym.Space) -> int:
    """The width of the action mask packed into ``space``'s observations (0: none)."""
    return getattr(space, "mask_width", 0) if isinstance(space, MaskedBox) else 0


def has_action_mask(space: gym.Space) -> bool:
    """True for a ``Dict`` observation space in the ``observation`` / ``action_mask`` convention."""
    return isinstance(space, gym.spaces.Dict) and set(space.spaces) == {OBS_KEY, MASK_KEY}


def packed_space(space: gym.spaces.Dict, action_space: gym.Space) -> MaskedBox:
    """The :class:`MaskedBox` for a ``Dict`` space in the mask convention, checked against the actions."""
    obs, mask = space[OBS_KEY], space[MASK_KEY]
    if not isinstance(action_space, gym.spaces.Discrete):
        raise CanterError(f"action masks need a Discrete action space, not {type(action_space).__name__}")
    if isinstance(obs, gym.spaces.Discrete):
        low, high = np.zeros(int(obs.n)), np.ones(int(obs.n))  # one-hot
    elif isinstance(obs, gym.spaces.Box):
        low, high = np.asarray(obs.low, np.float64).reshape(-1), np.asarray(obs.high, np.float64).reshape(-1)
    else:
        raise CanterError(f"the '{OBS_KEY}' entry of a masked observation must be a Box or Discrete space, "
                          f"not {type(obs).__name__}")
    width = int(np.prod(getattr(mask, "shape", ()) or (0,)))
    if not isinstance(mask, (gym.spaces.Box, gym.spaces.MultiBinary)) or width != int(action_space.n):
        raise CanterError(f"the '{MASK_KEY}' entry must hold one 0/1 value per action ({int(action_space.n)}), "
                          f"got {mask}")
    return MaskedBox(np.concatenate([low, np.zeros(width)]), np.concatenate([high, np.ones(width)]), width)


class MaskPacker:
    """Packs ``{"observation": x, "action_mask": m}`` observations of a ``Dict`` space in the mask
    convention into one vector of :attr:`space`, a :class:`MaskedBox`."""

    def __init__(self, space: gym.spaces.Dict, action_space: gym.Space) -> None:
        obs = space[OBS_KEY]
        self.space = packed_space(space, action_space)
        self._one_hot = int(obs.n) if isinstance(obs, gym.spaces.Discrete) else 0
        self._start = int(obs.start) if self._one_hot else 0

    def __call__(self, observation: dict[str, Any]) -> np.ndarray:
        """The packed vector of one observation."""
        x, mask = observation[OBS_KEY], observation[MASK_KEY]
        if self._one_hot:
            x = np.eye(self._one_hot, dtype=np.float32)[int(x) - self._start]
        return np.concatenate([np.asarray(x, np.float32).reshape(-1), np.asarray(mask, np.float32).reshape(-1)])


class PackActionMask(gym.ObservationWrapper):
    """An env whose observations carry an action mask, with each observation packed (:class:`MaskPacker`)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._pack = MaskPacker(env.observation_space, env.action_space)
        self.observation_space = self._pack.space

    def observation(self, observation: dict[str, Any]) -> np.ndarray:  # noqa: D102
        return self._pack(observation)


class InfoActionMask(gym.Wrapper):
    """An env that reports its action mask in ``info[key]`` (gymnasium's ``Taxi-v4`` does) with the
    mask moved into its observations, in the ``{"observation", "action_mask"}`` convention that
    canter's vector envs pack. Register the wrapped env to train on it::

        gym.register("TaxiMasked-v4", entry_point=lambda **kw: InfoActionMask(gym.make("Taxi-v4", **kw)))
    """

    def __init__(self, env: gym.Env, key: str = MASK_KEY) -> None:
        super().__init__(env)
        if not isinstance(env.action_space, gym.spaces.Discrete):
            raise CanterError(f"action masks need a Discrete action space, not {type(env.action_space).__name__}")
        self.key = key
        self.observation_space = gym.spaces.Dict(
            {OBS_KEY: env.observation_space, MASK_KEY: gym.spaces.MultiBinary(int(env.action_space.n))})

    def _with_mask(self, obs: Any, info: dict[str, Any]) -> dict[str, Any]:
        if self.key not in info:
            raise CanterError(f"the env's info has no '{self.key}' entry (InfoActionMask reads the mask there)")
        return {OBS_KEY: obs, MASK_KEY: np.asarray(info[self.key], np.int8)}

    def reset(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:  # noqa: D102
        obs, info = self.env.reset(**kwargs)
        return self._with_mask(obs, info), info

    def step(self, action: Any) -> tuple[dict[str, Any], Any, bool, bool, dict[str, Any]]:  # noqa: D102
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._with_mask(obs, info), reward, terminated, truncated, info


def pack_if_masked(env: gym.Env) -> gym.Env:
    """``env`` wrapped in :class:`PackActionMask` when its observations carry an action mask, else ``env``."""
    return PackActionMask(env) if has_action_mask(env.observation_space) else env


# -- the models' side ---------------------------------------------------------------------------
def split_mask(obs: Any, width: int) -> tuple[Any, Any]:
    """``(observation part, allowed)`` of a packed batch ``[..., d + width]`` (torch or NumPy):
    ``allowed`` is a bool ``[..., width]``, all true where the mask allows nothing."""
    x, m = obs[..., :-width], obs[..., -width:]
    allowed = m > 0.5
    if isinstance(allowed, torch.Tensor):
        return x, allowed | ~allowed.any(-1, keepdim=True)
    return x, allowed | ~allowed.any(-1, keepdims=True)


def apply_mask(values: Any, allowed: Any) -> Any:
    """``values`` ``[..., n]`` (logits or Q values, torch or NumPy) with disallowed entries set to
    :data:`MASKED` (autograd: no gradient reaches them)."""
    if isinstance(values, torch.Tensor):
        return values.masked_fill(~allowed, MASKED)
    return np.where(allowed, values, np.float32(MASKED)).astype(values.dtype, copy=False)


def random_allowed(allowed: np.ndarray, generator: torch.Generator) -> np.ndarray:
    """One uniformly random allowed action per row of ``allowed`` ``[..., n]`` (epsilon-greedy exploration)."""
    u = torch.rand(allowed.shape, generator=generator).numpy()
    return np.where(allowed, u, -1.0).argmax(-1)
