"""``env_kwargs: {max_episode_steps: null}``: the env's own time limit, on every path that makes a Gymnasium id."""
from __future__ import annotations

import numpy as np
import pytest

from canter.envs import make_env, make_vec_env


@pytest.mark.parametrize("vectorization, n_envs", [("native", 4), ("auto", 4), ("sync", 2)])
def test_a_null_max_episode_steps_is_the_envs_own_limit(vectorization, n_envs):
    """CartPole's native vector env (n_envs >= 4, auto) was given the None: "'>=' not supported between instances
    of 'int' and 'NoneType'" from its first step, a traceback of canter train."""
    env = make_vec_env("CartPole-v1", n_envs, vectorization, {"max_episode_steps": None}, training=True)
    try:
        env.reset(seed=0)
        env.step(np.zeros(n_envs, np.int64))
        inner = env.env
        limit = (inner.max_episode_steps if hasattr(inner, "max_episode_steps")
                 else inner.envs[0].spec.max_episode_steps)
        assert limit == 500
    finally:
        env.close()


def test_play_envs_take_a_null_max_episode_steps_as_the_envs_own_limit():
    env = make_env("CartPole-v1", max_episode_steps=None)
    try:
        assert env.spec.max_episode_steps == 500
    finally:
        env.close()


def test_a_datasets_env_spec_keeps_the_envs_own_limit_for_a_null_max_episode_steps():
    """The env spec a dataset gives Minari (TransitionDataset.env_spec) took the None as the spec's limit: the data of
    a CartPole collected with its own 500-step limit was recorded as an env without one (gymnasium.make(spec) gave
    no TimeLimit), where canter's envs read the null as the env's own limit."""
    import gymnasium as gym

    from canter.data.dataset import TransitionDataset

    env = gym.make("CartPole-v1")
    rows = np.zeros((2, 4), np.float32)
    data = TransitionDataset(rows, np.zeros(2, np.int64), np.zeros(2, np.float32), rows, np.zeros(2, bool),
                             np.zeros(2, bool), "CartPole-v1", env.observation_space, env.action_space,
                             env_kwargs={"max_episode_steps": None})
    assert data.env_spec().max_episode_steps == 500
    data.env_kwargs = {"max_episode_steps": 20}  # a limit given is still the spec's
    assert data.env_spec().max_episode_steps == 20
    env.close()
