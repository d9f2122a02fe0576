"""Uniform random actions as an env takes them, for any action space canter trains on (the
off-policy warm-up, ``canter collect`` without a policy or with ``--epsilon``)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np

from canter.envs.masks import mask_width, split_mask
from canter.envs.spaces import action_nvec
from canter.errors import CanterError


def random_env_actions(space: gym.Space, n: int, rng: np.random.Generator, obs: np.ndarray | None = None,
                       obs_space: gym.Space | None = None) -> np.ndarray:
    """``n`` uniform random actions as the env takes them (Discrete, MultiDiscrete, MultiBinary or Box); where
    ``obs_space`` packs an action mask (:mod:`canter.envs.masks`), uniform over the actions that
    each row of ``obs`` allows. A Box's unbounded dimensions draw as gymnasium's ``Box.sample``
    does: a standard normal where both bounds are infinite, an exponential away from a single one;
    a Box of integers draws whole numbers from ``low`` to ``high``, both included."""
    width = mask_width(obs_space) if obs_space is not None else 0
    if width and obs is not None:
        joint = len(obs_space.shape) == 2 and isinstance(space, gym.spaces.MultiDiscrete)
        if joint:  # a joint observation (QMIX): each agent's mask in its row, then the state's row
            return allowed_choice(split_mask(obs, width)[1][:, :len(space.nvec)], rng) + space.start
        return allowed_choice(split_mask(obs, width, action_nvec(space))[1], rng, space)
    if isinstance(space, gym.spaces.Discrete):
        return rng.integers(0, int(space.n), size=n) + int(space.start)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return (rng.integers(0, space.nvec, size=(n, *space.nvec.shape)) + space.start).astype(space.dtype)
    if isinstance(space, gym.spaces.MultiBinary):
        return rng.integers(0, 2, size=(n, *space.shape)).astype(space.dtype)
    if isinstance(space, gym.spaces.Box):
        if np.issubdtype(space.dtype, np.integer):  # low..high, both included, as gymnasium's Box.sample draws
            return rng.integers(space.low, space.high, size=(n, *space.shape), endpoint=True).astype(space.dtype)
        if np.isfinite(space.low).all() and np.isfinite(space.high).all():
            low, high = space.low.astype(np.float64), space.high.astype(np.float64)
            with np.errstate(over="ignore"):
                wide = not np.isfinite(high - low).all()
            if wide:  # float64's -1.8e308..1.8e308: NumPy's uniform (and gymnasium's Box.sample) raise OverflowError
                half_low, half_high = 0.5 * low, 0.5 * high  # about the middle, as canter's squashed actions
                u = rng.uniform(-1.0, 1.0, size=(n, *space.shape))
                return np.clip((half_high + half_low) + u * (half_high - half_low), low, high).astype(space.dtype)
            return rng.uniform(space.low, space.high, size=(n, *space.shape)).astype(space.dtype)
        return _unbounded_box_actions(space, n, rng)
    raise CanterError(f"cannot draw random actions for a {type(space).__name__} action space")


def allowed_choice(allowed: np.ndarray, rng: np.random.Generator, space: gym.Space | None = None) -> np.ndarray:
    """A uniformly random allowed action per row of ``allowed`` ``[..., n]`` (indices), or with a
    factored ``space`` (MultiDiscrete / MultiBinary, ``allowed`` ``[B, sum(nvec)]``: each sub-action's
    entries), each sub-action's among its allowed ones, as the env takes them; else ``space``'s actions."""
    score = np.where(allowed, rng.random(allowed.shape), -1.0)
    nvec = action_nvec(space) if space is not None else None
    if nvec is None:
        return score.argmax(-1) + (int(space.start) if space is not None else 0)
    from canter.models.distributions import segments

    picks = np.stack([score[:, s].argmax(-1) for s in segments(nvec)], -1).reshape(len(score), *space.shape)
    return (picks + getattr(space, "start", 0)).astype(space.dtype)


def _unbounded_box_actions(space: gym.spaces.Box, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` random actions of a Box with infinite bounds (see :func:`random_env_actions`)."""
    shape = (n, *space.shape)
    low = np.broadcast_to(np.asarray(space.low, np.float64), shape)
    high = np.broadcast_to(np.asarray(space.high, np.float64), shape)
    has_low, has_high = np.isfinite(low), np.isfinite(high)
    out = np.empty(shape, np.float64)
    both, neither = has_low & has_high, ~has_low & ~has_high
    lower, upper = has_low & ~has_high, ~has_low & has_high
    out[both] = rng.uniform(low[both], high[both])
    out[neither] = rng.standard_normal(int(neither.sum()))
    out[lower] = low[lower] + rng.exponential(size=int(lower.sum()))
    out[upper] = high[upper] - rng.exponential(size=int(upper.sum()))
    return out.astype(space.dtype)
