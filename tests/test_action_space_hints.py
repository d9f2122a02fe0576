"""The hint of a refused action space comes from one rule for every algorithm: MAPPO's refusal of MultiDiscrete
actions named its trainer family alone (a2c, npg, ppo, reinforce, trpo) where DQN's named appo, impala and
recurrent_ppo too, which act in MultiDiscrete spaces as well."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from canter.errors import CanterError
from canter.registry import lookup

EVERY = "algorithms for MultiDiscrete actions: a2c, appo, impala, npg, ppo, recurrent_ppo, reinforce, trpo"


@pytest.mark.parametrize("algo", ["mappo", "dqn", "sac"])
def test_multidiscrete_refusals_name_the_same_algorithms(algo):
    obs = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    with pytest.raises(CanterError) as err:
        lookup("algorithm", algo).check_spaces(obs, gym.spaces.MultiDiscrete([3, 2]))
    assert str(err.value).endswith(EVERY), str(err.value)


def test_a_family_of_one_names_the_others_that_learn_alike():
    """recurrent_ppo's family holds only itself: its hint named no other algorithm."""
    hint = lookup("algorithm", "recurrent_ppo")._algorithms_for(gym.spaces.MultiDiscrete([3, 2]))
    assert hint == "; for MultiDiscrete actions use recurrent_ppo (or a2c, appo, impala, npg, ppo, reinforce, trpo)"


@pytest.mark.parametrize("algo", ["ppo", "dqn", "sac"])
def test_a_space_no_algorithm_takes_says_so_and_which_one_space_its_entries_make(algo):
    """A Tuple or Dict of actions was refused with "needs a Discrete action space" alone: no algorithm named,
    nothing said of how to train on such an env."""
    obs, cls = gym.spaces.Box(-1.0, 1.0, (3,), np.float32), lookup("algorithm", algo)
    for actions, target, one in ((gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3))), "MultiDiscrete",
                                  "ppo"),
                                 (gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (2,))}), "Box", "sac"),
                                 (gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Box(-1, 1, (2,)))), None, None)):
        with pytest.raises(CanterError) as err:
            cls.check_spaces(obs, actions)
        text = str(err.value)
        assert f"no canter algorithm acts in a {type(actions).__name__} action space: give the env one action space, " \
               "e.g. with a gymnasium.ActionWrapper in an env factory of your own" in text, text
        if target is None:
            assert text.endswith("(a MultiDiscrete of discrete entries, or a Box of continuous ones)"), text
        else:
            assert f"its entries as one {target} ({target} actions: " in text and f" {one}," in text, text
