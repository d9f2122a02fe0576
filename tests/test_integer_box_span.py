"""Squashed actions (SAC, TQC, TD3, DDPG) of a Box of integers whose span ``high - low`` exceeds its dtype (an int8
``Box(-100, 100)``, an int16 ``Box(-30000, 30000)``, an int64 Box of the dtype's whole range): the span wrapped in the
space's dtype, so every policy action went to the env as ``low`` and every warm-up action was stored as 0."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from canter.agents.agent import Agent
from canter.registry import lookup
from canter.trainers.off_policy import random_actions

_INT64 = np.iinfo(np.int64)


@pytest.mark.parametrize("space", [gym.spaces.Box(-100, 100, (1,), np.int8), gym.spaces.Box(-30000, 30000, (1,), np.int16),
                                   gym.spaces.Box(_INT64.min, _INT64.max, (1,), np.int64)], ids=str)
def test_squashed_actions_of_an_integer_box_wider_than_its_dtype_cover_it(space):
    algo = lookup("algorithm", "sac")
    agent = Agent(algo(gym.spaces.Box(-1, 1, (3,)), space, algo.Config(net_arch=[8])))
    env = agent.to_env_actions(np.array([[-1.0], [0.0], [1.0]], np.float32)).ravel()
    assert env.dtype == space.dtype and all(space.contains(np.array([a], space.dtype)) for a in env)
    low, high = int(space.low[0]), int(space.high[0])
    span = high - low
    assert int(env[0]) == low and high - int(env[2]) <= span // 10**6 and abs(int(env[1])) <= span // 10**6 + 1
    np.testing.assert_allclose(agent.from_env_actions(np.array([[space.low[0]], [space.high[0]]], space.dtype)).ravel(),
                               [-1.0, 1.0])
    env_actions, stored = random_actions(agent, 200, np.random.default_rng(0))
    assert stored.std() > 0.3  # the warm-up's spread actions, stored scaled (all 0 before)
    np.testing.assert_allclose(agent.to_env_actions(stored).astype(np.float64), env_actions.astype(np.float64),
                               atol=max(1.0, span * 1e-6))  # float32 in [-1, 1]: 24 bits of a 64-bit span
