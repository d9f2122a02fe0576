"""A dataset's terminated and truncated flags are booleans, or 0 and 1 (d3rlpy's and D4RL's float columns): any
other value is refused in one line, where it silently became a flag that was set."""
from __future__ import annotations

import numpy as np
import pytest

from canter.data.dataset import TransitionDataset, collect
from canter.errors import CanterError


@pytest.fixture(scope="module")
def arrays():
    data = collect("CartPole-v1", 40, None, seed=0)
    spaces = dict(env_id="CartPole-v1", observation_space=data.observation_space, action_space=data.action_space)
    return {k: getattr(data, k) for k in ("obs", "actions", "rewards", "next_obs", "terminated", "truncated")}, spaces


@pytest.mark.parametrize("name", ["terminated", "truncated"])
@pytest.mark.parametrize("value", [np.nan, 0.5, 2.0, -1.0])
def test_flags_that_are_not_0_or_1_are_refused(arrays, name, value):
    """A NaN terminated flag became True (astype(bool)): the transition stopped bootstrapping, silently."""
    given, spaces = arrays
    bad = {**given, name: given[name].astype(np.float32)}
    bad[name][7] = value
    with pytest.raises(CanterError, match=f"dataset {name} .*row 7.*0 and 1"):
        TransitionDataset(**bad, **spaces)


def test_flags_of_0_and_1_in_any_dtype_are_taken(arrays):
    given, spaces = arrays
    for dtype in (np.float32, np.float64, np.int64, np.uint8):
        data = TransitionDataset(**{**given, "terminated": given["terminated"].astype(dtype),
                                    "truncated": given["truncated"].astype(dtype)}, **spaces)
        np.testing.assert_array_equal(data.terminated, given["terminated"])
        assert data.terminated.dtype == bool and data.truncated.dtype == bool
