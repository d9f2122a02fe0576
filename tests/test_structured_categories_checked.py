"""A Discrete or MultiDiscrete entry of a structured observation (packed into a vector) outside its space: a
one-line error naming the env (or the row) and the entry. gymnasium's flatten one-hot encodes ``x - start`` by
indexing: a value below ``start`` was another category without a word, one above an IndexError traceback."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import odd_api_env  # noqa: F401 (registers MultiDiscreteOut-v0)
from canter.envs import make_vec_env
from canter.envs.packing import ObservationPacker, pack_rows
from canter.errors import CanterError


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_multidiscrete_observation_below_start_is_one_line(vectorization):
    env = make_vec_env("odd_api_env:MultiDiscreteOut-v0", 2, vectorization)
    try:
        env.reset(seed=0)
        env.step(np.zeros(2, np.int64))
        env.step(np.zeros(2, np.int64))
        with pytest.raises(CanterError, match=r"env 'odd_api_env:MultiDiscreteOut-v0'.*the observation holds \[-3, 5\], "
                                              r"outside its space MultiDiscrete"):
            env.step(np.zeros(2, np.int64))
    finally:
        env.close()


def test_tuple_entry_outside_its_discrete_space_names_the_entry_and_row():
    space = gym.spaces.Tuple((gym.spaces.Discrete(3, start=1), gym.spaces.Box(-1, 1, (2,), np.float32)))
    packer = ObservationPacker(space, gym.spaces.Discrete(2))
    assert packer((2, np.zeros(2, np.float32)))[:3].tolist() == [0, 1, 0]
    with pytest.raises(CanterError, match=r"observation entry '\[0\]' holds 0, outside its space Discrete\(3, start=1\)"):
        packer((0, np.zeros(2, np.float32)))  # index -1: the last category, before
    with pytest.raises(CanterError, match=r"observations row 1 is not an observation.*'\[0\]' holds 4"):
        pack_rows([(1, np.zeros(2, np.float32)), (4, np.zeros(2, np.float32))], packer, "observations")


def test_a_discrete_entry_given_as_a_one_element_array_still_packs():
    """gymnasium's flatten takes np.array([2]) for a Discrete entry; the range check refused it as 'holds [2], outside
    its space Discrete(4)' (it compared shapes), where 2 is inside. Its values are still checked."""
    space = gym.spaces.Dict({"cell": gym.spaces.Discrete(4), "pos": gym.spaces.Box(0, 1, (2,), np.float32)})
    packer = ObservationPacker(space, gym.spaces.Discrete(2))
    assert packer({"cell": np.array([2]), "pos": np.zeros(2, np.float32)})[:4].tolist() == [0, 0, 1, 0]
    with pytest.raises(CanterError, match=r"observation entry 'cell' holds \[4\], outside its space Discrete\(4\)"):
        packer({"cell": np.array([4]), "pos": np.zeros(2, np.float32)})


class FloatCodes(gym.Env):
    """MultiDiscrete([3, 4]) observations returned as floats, [1.0, 2.0]."""

    observation_space, action_space = gym.spaces.MultiDiscrete([3, 4]), gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):  # noqa: D102
        super().reset(seed=seed)
        return np.array([1.0, 2.0]), {}

    def step(self, action):  # noqa: D102
        return np.array([1.0, 2.0]), 0.0, True, False, {}


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_multidiscrete_observation_of_floats_is_one_line_naming_the_env(vectorization):
    """gymnasium's flatten indexes with the values: floats were "IndexError: arrays used as indices must be of integer
    (or boolean) type", a traceback from gymnasium's spaces/utils.py (sync), or that line as the worker's (async)."""
    from canter.registry import register

    register("env", "FloatCodes-test")(FloatCodes)
    env = make_vec_env("FloatCodes-test", 2, vectorization)
    try:
        with pytest.raises(CanterError, match=r"env 'FloatCodes-test'.*the observation holds float64 values \[1.0, 2.0\], "
                                              r"where its space MultiDiscrete\(\[3 4\]\) holds integers"):
            env.reset(seed=0)
    finally:
        env.close()


def test_async_error_of_an_observation_outside_its_space_names_no_canter_file():
    """The worker's line named canter's own check as where it was raised ("reset() raised OutsideSpace: ...
    (canter/envs/packing.py, line 251)"), where the env returned the value; sync vectorization's line names none."""
    env = make_vec_env("odd_api_env:MultiDiscreteOut-v0", 2, "async")
    try:
        env.reset(seed=0)
        env.step(np.zeros(2, np.int64))
        env.step(np.zeros(2, np.int64))
        with pytest.raises(CanterError, match=r"^env 'odd_api_env:MultiDiscreteOut-v0' failed in an async worker: "
                                              r"step\(\): the observation holds \[-3, 5\], outside its space "
                                              r"MultiDiscrete\(\[3 2\], start=\[-1  5\]\)$"):
            env.step(np.zeros(2, np.int64))
    finally:
        env.close()
