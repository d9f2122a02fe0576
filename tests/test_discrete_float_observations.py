"""A Discrete observation space whose env returns floats (``3.0``): with sync vectorization gymnasium's stacking of
them into the int64 array was a TypeError traceback ("Cannot cast array data from dtype('float64') to dtype('int64')
according to the rule 'same_kind'"); it is the one line of an observation that does not fit its space, as one of
another shape is."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from canter.envs import make_vec_env
from canter.errors import CanterError
from canter.registry import register


class FloatCell(gym.Env):
    """Discrete(4) observations returned as floats from step ``after`` on (0: reset's too)."""

    def __init__(self, after: int = 0) -> None:
        self.observation_space, self.action_space = gym.spaces.Discrete(4), gym.spaces.Discrete(2)
        self.after, self.t = after, 0

    def _obs(self):
        return float(self.t % 4) if self.t >= self.after else self.t % 4

    def reset(self, *, seed=None, options=None):  # noqa: D102
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):  # noqa: D102
        self.t += 1
        return self._obs(), 0.0, False, self.t >= 5, {}


register("env", "FloatCell-test")(FloatCell)


@pytest.mark.parametrize("after", [0, 2], ids=["reset", "step"])
def test_float_observations_of_a_discrete_space_are_one_line(after):
    env = make_vec_env("FloatCell-test", 2, "sync", {"after": after})
    try:
        with pytest.raises(CanterError, match=r"^env 'FloatCell-test': the env returned an observation that does not "
                                              r"fit its observation space Discrete\(4\): Cannot cast array data from "
                                              r"dtype\('float64'\) to dtype\('int64'\)"):
            env.reset(seed=0)
            for _ in range(3):
                env.step(np.zeros(2, np.int64))
    finally:
        env.close()


class OneItemCell(FloatCell):
    """Discrete(4) observations returned as ``array([v])`` from step ``after`` on."""

    def _obs(self):
        return np.array([self.t % 4]) if self.t >= self.after else self.t % 4


register("env", "OneItemCell-test")(OneItemCell)


@pytest.mark.parametrize("env_id, shown", [("FloatCell-test", r"2\.0 \(float of shape \(\)\)"),
                                           ("OneItemCell-test", r"array\(\[2\]\) \(ndarray of shape \(1,\)\)")],
                         ids=["float", "one-item"])
def test_async_workers_refuse_what_sync_vectorization_refuses(env_id, shown):
    """An async worker's copy into its shared array took 3.0 and array([3]) without a word, where sync
    vectorization refuses both: a run's outcome depended on its vectorization."""
    with pytest.raises(CanterError, match=rf"^env '{env_id}' failed in an async worker: step\(\) returned an "
                                          rf"observation that does not fit its observation space Discrete\(4\): "
                                          rf"{shown}, not one whole number$"):
        env = make_vec_env(env_id, 2, "async", {"after": 2})
        try:
            env.reset(seed=0)
            for _ in range(3):
                env.step(np.zeros(2, np.int64))
        finally:
            env.close()


class BoolCell(FloatCell):
    """Discrete(2) observations returned as booleans (a Python bool, a NumPy bool), which sync vectorization takes."""

    def __init__(self, numpy_bool: bool = False) -> None:
        super().__init__()
        self.observation_space, self.numpy_bool = gym.spaces.Discrete(2), numpy_bool

    def _obs(self):
        return np.bool_(self.t % 2) if self.numpy_bool else bool(self.t % 2)


register("env", "BoolCell-test")(BoolCell)


@pytest.mark.parametrize("numpy_bool", [False, True], ids=["bool", "numpy-bool"])
def test_async_workers_take_the_booleans_sync_vectorization_takes(numpy_bool):
    """148246f's check refused a bool (True: 'bool of shape (), not one whole number') in an async worker, where sync
    vectorization copies it into its int64 array as 1: the same env failed with async and trained with sync."""
    seen = {}
    for vectorization in ("sync", "async"):
        env = make_vec_env("BoolCell-test", 2, vectorization, {"numpy_bool": numpy_bool})
        try:
            seen[vectorization] = [np.asarray(env.reset(seed=0)).tolist()]
            for _ in range(2):
                seen[vectorization].append(np.asarray(env.step(np.zeros(2, np.int64)).obs).tolist())
        finally:
            env.close()
    assert seen["async"] == seen["sync"] == [[0, 0], [1, 1], [0, 0]], seen


class FloatPixels(gym.Env):
    """An integer Box (``int64``, or ``uint8`` pixels) whose observations come as floats, ``[1.5, 2.0]``."""

    def __init__(self, dtype: str = "int64") -> None:
        self.observation_space = gym.spaces.Box(0, 10, (2,), np.dtype(dtype))
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):  # noqa: D102
        super().reset(seed=seed)
        return np.array([1.5, 2.0]), {}

    def step(self, action):  # noqa: D102
        return np.array([1.5, 2.0]), 0.0, False, False, {}


register("env", "FloatPixels-test")(FloatPixels)


@pytest.mark.parametrize("dtype", ["int64", "uint8"])
@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_float_observations_of_an_integer_box_are_refused_by_either_vectorization(vectorization, dtype):
    """Sync vectorization refuses floats where a Box holds integers (a9d57ec: 'Cannot cast array data from
    dtype('float64')'); an async worker's copy into its shared array cast them without a word (1.5 trained as 1),
    as it did a Discrete space's 3.0 before 148246f."""
    env = make_vec_env("FloatPixels-test", 2, vectorization, {"dtype": dtype})
    try:
        with pytest.raises(CanterError, match=rf"^env 'FloatPixels-test'.* an observation that does not fit its "
                                              rf"observation space Box\(shape=\(2,\), {dtype}\): .*float64"):
            env.reset(seed=0)
    finally:
        env.close()


class Transposed(gym.Env):
    """A Box (3, 2) whose observations come transposed, (2, 3)."""

    observation_space, action_space = gym.spaces.Box(0.0, 10.0, (3, 2), np.float32), gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):  # noqa: D102
        super().reset(seed=seed)
        return np.arange(6, dtype=np.float32).reshape(2, 3), {}

    def step(self, action):  # noqa: D102
        return np.arange(6, dtype=np.float32).reshape(2, 3), 0.0, False, False, {}


register("env", "Transposed-test")(Transposed)


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_a_box_observation_of_another_shape_with_as_many_values_is_refused_by_either_vectorization(vectorization):
    """Sync vectorization refuses an observation of another shape ('Output array has wrong dimensionality'); an async
    worker's copy into its shared array flattened it into the space's shape without a word: a (2, 3) observation of a
    (3, 2) space trained with its values moved, as array([3]) of a Discrete space did before 148246f."""
    env = make_vec_env("Transposed-test", 2, vectorization)
    try:
        with pytest.raises(CanterError, match=r"^env 'Transposed-test'.* an observation that does not fit its "
                                              r"observation space Box\(shape=\(3, 2\), float32\)[^\n]*$"):
            env.reset(seed=0)
    finally:
        env.close()


class ComplexBox(gym.Env):
    """A float32 Box (2,) whose observations are complex numbers."""

    observation_space, action_space = gym.spaces.Box(0.0, 10.0, (2,), np.float32), gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):  # noqa: D102
        super().reset(seed=seed)
        return np.array([1 + 2j, 3]), {}

    def step(self, action):  # noqa: D102
        return np.array([1 + 2j, 3]), 0.0, False, False, {}


register("env", "ComplexBox-test")(ComplexBox)


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_complex_observations_of_a_float_box_are_refused_by_either_vectorization(vectorization):
    """Sync vectorization refuses complex numbers where a Box holds floats ('Cannot cast array data from
    dtype('complex128') to dtype('float32')'); 3f93950 checked integer Boxes only, so an async worker's copy into its
    shared array dropped their imaginary parts (NumPy's ComplexWarning, and training went on)."""
    env = make_vec_env("ComplexBox-test", 2, vectorization)
    try:
        with pytest.raises(CanterError, match=r"^env 'ComplexBox-test'.* an observation that does not fit its "
                                              r"observation space Box\(shape=\(2,\), float32\): .*complex128"):
            env.reset(seed=0)
    finally:
        env.close()
