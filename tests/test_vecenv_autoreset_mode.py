"""canter.envs.VecEnv (exported; canter.trainers.evaluation.evaluate takes one) reads a vector env's steps in
gymnasium's NEXT_STEP autoreset mode. Given one in SAME_STEP mode it took the real step after each episode's end for
the reset-only one without a word: every later episode of a 4-step env counted a return of 3 and a length of 3, and
the observation it took for a truncated episode's final one was the next episode's first. DISABLED mode was
gymnasium's AssertionError traceback at the step after an episode's end. Both are now one line naming the mode and
the setting; a vector env that says no mode is taken as NEXT_STEP, as gymnasium takes it."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import counter_envs  # noqa: F401  (registers StepCount-v0)
from canter.envs import VecEnv
from canter.errors import CanterError


def _vector(mode: gym.vector.AutoresetMode | None) -> gym.vector.VectorEnv:
    env = gym.make_vec("StepCount-v0", 2, vectorization_mode="sync",
                       vector_kwargs={} if mode is None else {"autoreset_mode": mode})
    return env


@pytest.mark.parametrize("mode, name", [(gym.vector.AutoresetMode.SAME_STEP, "SAME_STEP"),
                                        (gym.vector.AutoresetMode.DISABLED, "DISABLED"), ("SameStep", "SAME_STEP")])
def test_a_vector_env_of_another_autoreset_mode_is_refused_in_one_line(mode, name):
    env = _vector(gym.vector.AutoresetMode.SAME_STEP if mode == "SameStep" else mode)
    env.metadata = {**env.metadata, "autoreset_mode": mode}  # (an env may write the mode's value)
    with pytest.raises(CanterError, match=rf"^VecEnv takes a vector env in gymnasium's NEXT_STEP autoreset mode "
                                          rf"\(docs/architecture.md section 3\), got one in {name} mode: make it with "
                                          rf"autoreset_mode=gymnasium.vector.AutoresetMode.NEXT_STEP"):
        VecEnv(env)
    env.close()


@pytest.mark.parametrize("declared", [True, False])
def test_next_step_vector_envs_count_whole_episodes(declared):
    env = _vector(None)  # gymnasium's default: NEXT_STEP
    if not declared:  # a vector env of the user's that says no mode: taken as NEXT_STEP
        env.metadata = {k: v for k, v in env.metadata.items() if k != "autoreset_mode"}
    vec = VecEnv(env)
    vec.reset(seed=0)
    returns, lengths = [], []
    for _ in range(15):
        vec.step(np.zeros(2, dtype=np.int64))
        returns += vec.finished_returns.tolist()
        lengths += vec.finished_lengths.tolist()
    vec.close()
    assert returns == [4.0] * 6 and lengths == [4] * 6
