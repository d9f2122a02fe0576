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
