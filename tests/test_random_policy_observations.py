"""A multi-policy run's fixed random policy takes observations as an Agent does (its checks inherited): since
d2ff7c97 added ``_check_binary`` to the agent's ``as_batch``, every draw of ``RandomPolicy`` was an AttributeError."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from canter.agents.fixed import RandomPolicy
from canter.errors import CanterError


def test_random_policy_acts_on_one_observation_and_a_batch():
    policy = RandomPolicy(gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Discrete(2), seed=0)
    assert policy.predict(np.zeros(3, np.float32)) in (0, 1)
    assert policy.predict(np.zeros((4, 3), np.float32)).shape == (4,)


def test_random_policy_refuses_an_observation_of_another_shape():
    policy = RandomPolicy(gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Discrete(2), seed=0)
    with pytest.raises(CanterError, match="expected one observation of shape"):
        policy.predict(np.zeros(5, np.float32))
