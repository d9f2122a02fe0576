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


class TwoBits(gym.Env):
    """A Dict observation whose MultiBinary(4) entry 'bits' holds a 2."""

    observation_space = gym.spaces.Dict({"bits": gym.spaces.MultiBinary(4), "pos": gym.spaces.Box(0, 1, (2,), np.float32)})
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):  # noqa: D102
        super().reset(seed=seed)
        return {"bits": np.array([2, 0, 1, 0], np.int8), "pos": np.zeros(2, np.float32)}, {}

    def step(self, action):  # noqa: D102
        return self.reset()[0], 0.0, False, False, {}


def test_multibinary_entry_holding_a_2_is_one_line_naming_the_env():
    """gymnasium's flatten casts a MultiBinary's values to int8: a 2 was trained on as 2.0 without a word (predict
    refused it). Now refused as a Discrete or MultiDiscrete value outside its space is."""
    from canter.registry import register

    register("env", "TwoBits-test")(TwoBits)
    env = make_vec_env("TwoBits-test", 1, "sync")
    try:
        with pytest.raises(CanterError, match=r"^env 'TwoBits-test'.*observation entry 'bits' holds \[2, 0, 1, 0\], "
                                              r"outside its space MultiBinary\(4\)$"):
            env.reset(seed=0)
    finally:
        env.close()


@pytest.mark.parametrize("value", [np.array([0, 1, 2], np.int8), np.array([0, 255, 1], np.uint8),
                                   np.array([0, -1, 1], np.int64), np.array([0.5, 1.0, 0.0]), np.array([1, 0, 3], np.int16)])
def test_multibinary_values_other_than_0_and_1_are_refused(value):
    """A MultiBinary observation alone (packed as it is) or in a Tuple: 2, 255 (int8 -1 after flatten's cast), -1 and
    0.5 (0 after the cast) are outside the space, whatever the dtype."""
    mb = gym.spaces.MultiBinary(3)
    with pytest.raises(CanterError, match=r"^the observation holds \[.*\], outside its space MultiBinary\(3\)$"):
        ObservationPacker(mb, gym.spaces.Discrete(2))(value)
    packer = ObservationPacker(gym.spaces.Tuple((gym.spaces.Box(0, 1, (1,), np.float32), mb)), gym.spaces.Discrete(2))
    with pytest.raises(CanterError, match=r"^observation entry '\[1\]' holds .*, outside its space MultiBinary\(3\)$"):
        packer((np.zeros(1, np.float32), value))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, bool, np.int64, np.float32])
def test_multibinary_zeros_and_ones_pack_as_before(dtype):
    """0/1 values in any dtype (floats 1.0 included: flatten casts them) still pack, to the same vector."""
    packer = ObservationPacker(gym.spaces.MultiBinary(4), gym.spaces.Discrete(2))
    assert packer(np.array([1, 0, 1, 1], dtype)).tolist() == [1.0, 0.0, 1.0, 1.0]
