"""vectorization async with a space whose values have no fixed shape (Graph): one line naming the env and the space.

It was "bad env_kwargs for ...: As Graph(...) has a dynamic shape so its not possible to make a static shared
memory. For `AsyncVectorEnv`, disable `shared_memory`." (AsyncVectorEnv's TypeError, taken for a misspelled
env_kwargs key even where none were given; and no canter option disables shared memory).
"""
from __future__ import annotations

import pytest

import odd_api_env  # noqa: F401 (registers GraphObs-v0)
from canter.envs import make_vec_env
from canter.errors import CanterError


def test_graph_observations_are_refused_in_one_line():
    with pytest.raises(CanterError) as info:
        make_vec_env("odd_api_env:GraphObs-v0", 2, "async")
    text = str(info.value)
    assert text.startswith("env 'odd_api_env:GraphObs-v0': observation space Graph is not supported"), text
    assert "env_kwargs" not in text and "shared_memory" not in text, text
