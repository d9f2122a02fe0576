"""Partially observable versions of classic-control envs, for recurrent policies.

``CartPoleNoVel-v1`` is CartPole-v1 observing only the cart position and the pole angle (rl-zoo3's
``CartPoleNoVel-v1``, on which sb3-contrib benchmarks ``RecurrentPPO``): the velocities must be
inferred from successive observations, which a feed-forward policy cannot do from one.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from canter.registry import register

#: CartPole's observation entries kept: cart position and pole angle
POSITIONS = np.array([0, 2])


class NoVelocity(gym.ObservationWrapper):
    """Keeps only the ``POSITIONS`` entries of CartPole's observation."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        box = env.observation_space
        self.observation_space = gym.spaces.Box(box.low[POSITIONS], box.high[POSITIONS], dtype=box.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:  # noqa: D102
        return observation[POSITIONS]


@register("env", "CartPoleNoVel-v1")
def cartpole_no_velocity(render_mode: str | None = None, **kwargs: Any) -> gym.Env:
    """CartPole-v1 without its two velocity entries (500-step episodes, as CartPole-v1)."""
    return NoVelocity(gym.make("CartPole-v1", render_mode=render_mode, **kwargs))
