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


@pytest.mark.parametrize("obs", [[0, 2, 1, 0], [0, 0.5, 1, 0], [[0, 1, 1, 0], [1, 1, -1, 0]]])
def test_predict_refuses_a_multibinary_observation_that_is_not_zeros_and_ones(obs):
    # a MultiBinary observation alone packs to a vector of its own shape: a 2 went to the model unchecked (a
    # MultiDiscrete or Discrete value out of range is refused)
    import canter

    trainer = canter.make_trainer("ppo", "space_matrix_env:SpaceMatrix-v0", env_kwargs={"obs": "multibinary"},
                                  run_dir=None, max_steps=64, n_envs=1, n_steps=64, net_arch=[8])
    with trainer:
        agent = trainer.agent
        assert agent.predict([0, 1, 1, 0]) in (0, 1, 2)
        with pytest.raises(CanterError, match=r"the observation \(MultiBinary\(4\)\) holds -?[0-9.]+ where the "
                                              r"values are whole numbers 0\.\.1"):
            agent.predict(obs)
