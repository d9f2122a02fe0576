"""The algorithms that an offline algorithm's refusal of a dataset's action space names."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from canter.errors import CanterError
from canter.registry import registered

OBS = gym.spaces.Box(-1, 1, (3,), np.float32)


@pytest.mark.parametrize("algo", ["bc", "cql", "td3bc"])
def test_an_offline_algorithm_given_actions_no_offline_one_takes_names_no_online_one(algo):
    """A dataset of MultiDiscrete actions (canter collect stores any env's): the refusal named a2c, ppo, ...,
    which refuse --dataset; it says that no offline algorithm learns from them."""
    with pytest.raises(CanterError) as info:
        registered("algorithm")[algo].check_spaces(OBS, gym.spaces.MultiDiscrete([3, 4, 2]))
    message = str(info.value)
    assert message.endswith("; no offline algorithm learns from MultiDiscrete actions"), message
    assert "ppo" not in message


def test_an_offline_algorithm_given_the_other_action_space_names_the_offline_ones():
    with pytest.raises(CanterError, match=r"algorithms for Discrete actions: bc, cql$"):
        registered("algorithm")["td3bc"].check_spaces(OBS, gym.spaces.Discrete(2))
    with pytest.raises(CanterError, match=r"algorithms for Box actions: bc, td3bc$"):
        registered("algorithm")["cql"].check_spaces(OBS, gym.spaces.Box(-1, 1, (2,), np.float32))
