"""Refusals of tests/space_matrix_env.py's spaces name algorithms that take them."""
from __future__ import annotations

import pytest
import space_matrix_env as sme

from canter.errors import CanterError
from canter.registry import lookup


@pytest.mark.parametrize("algo", ["dqn", "sac_discrete", "c51"])
def test_an_unbounded_box_refusal_names_algorithms_that_take_unbounded_boxes(algo):
    # DQN's refusal of Box(-inf, inf) named ddpg, sac, td3, tqc, which refuse an unbounded Box as well
    env = sme.SpaceMatrix("box_f32", "box_inf")
    with pytest.raises(CanterError) as info:
        lookup("algorithm", algo).check_spaces(env.observation_space, env.action_space)
    named = str(info.value).split("actions")[-1].split(" (on a PettingZoo")[0]
    named = named.replace("use", "").replace("(or", ",").replace(")", "")
    names = [n.strip() for n in named.replace(":", "").split(",") if n.strip()]
    assert names and "ppo" in names
    for name in names:
        lookup("algorithm", name).check_spaces(env.observation_space, env.action_space)  # each one takes it
