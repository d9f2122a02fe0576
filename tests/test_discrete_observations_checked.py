"""An env whose Discrete observation falls outside its space: a one-line error naming the env, the value and the
space. Training one-hot encoded it: torch's "Class values must be smaller than num_classes" (or "... non-negative")
traceback."""
from __future__ import annotations

import numpy as np
import pytest

import odd_api_env  # noqa: F401 (registers DiscreteOut-v0)
from canter.envs import make_vec_env
from canter.errors import CanterError


@pytest.mark.parametrize("n_envs,vectorization", [(1, "sync"), (2, "sync"), (2, "async")])
def test_observation_outside_discrete_space_is_one_line(n_envs, vectorization):
    env = make_vec_env("odd_api_env:DiscreteOut-v0", n_envs, vectorization)
    try:
        obs = env.reset(seed=0)
        assert (obs == 1).all()
        env.step(np.zeros(n_envs, np.int64))
        env.step(np.zeros(n_envs, np.int64))
        with pytest.raises(CanterError, match=r"^env 'odd_api_env:DiscreteOut-v0': the env returned observation 7 "
                                              r"outside its observation space Discrete\(4, start=1\): valid "
                                              r"observations are 1\.\.4$"):
            env.step(np.zeros(n_envs, np.int64))
    finally:
        env.close()


@pytest.mark.parametrize("policies", ["type", "agent"])
def test_multi_policy_observation_outside_discrete_space_is_one_line(policies):
    """One policy per agent type (or agent): each policy's rows are checked as one policy's are (they went unchecked
    to the model's one-hot encoding)."""
    env = make_vec_env("pettingzoo:tests.discrete_out_agents", 2, "sync", policies=policies)
    try:
        env.reset(seed=0)
        actions = {p: np.zeros(2, np.int64) for p in env.policies}
        env.step(actions)
        env.step(actions)
        with pytest.raises(CanterError, match=r"^env 'pettingzoo:tests.discrete_out_agents': the env returned "
                                              r"observation 9 outside its observation space Discrete\(4, start=1\)"):
            env.step(actions)
    finally:
        env.close()


@pytest.mark.parametrize("policies,same", [("type", False), ("shared", True)])
def test_an_agent_not_yet_joined_is_no_observation_outside_the_space(policies, same):
    """The rows of an agent that joins later held 0, outside Discrete(4, start=1): the check refused it as an
    observation the env returned (and one-hot encoding 0 - 1 fails). They hold the space's start now."""
    env = make_vec_env("pettingzoo:tests.discrete_out_agents", 2, "sync", {"late": True, "same": same},
                       policies=policies)
    try:
        obs = env.reset(seed=0)
        rows = obs["b"] if policies == "type" else obs
        assert rows.min() >= 1, rows
        for _ in range(3):
            env.step({p: np.zeros(2, np.int64) for p in env.policies} if policies == "type" else np.zeros(4, np.int64))
    finally:
        env.close()
