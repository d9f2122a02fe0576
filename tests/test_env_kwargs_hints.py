"""A misspelled env_kwargs key of a canter-registered factory named as 'module:Id' is hinted from the factory's own
parameters, and a hint never offers the refused key itself.

``--env my_pkg.envs:MyEnv-v0`` looked the factory up under the whole id, missed it, and hinted from gymnasium.make's
parameters: ``kindd`` got "did you mean 'id'?", and ``max_episode_steps`` (which the factory does not take)
"did you mean 'max_episode_steps'?".
"""
from __future__ import annotations

import pytest

import odd_api_env  # noqa: F401 (registers OddFactory-v0)
from canter.envs import make_vec_env
from canter.errors import CanterError


@pytest.mark.parametrize("env_id", ["odd_api_env:OddFactory-v0", "OddFactory-v0"])
def test_misspelled_factory_key_is_hinted_from_the_factory(env_id):
    with pytest.raises(CanterError, match=r"unexpected keyword argument 'kindd'; did you mean 'kind'\?$"):
        make_vec_env(env_id, 1, "sync", {"kindd": "Plain"})


def test_max_episode_steps_that_a_factory_refuses_says_where_it_goes():
    with pytest.raises(CanterError) as info:
        make_vec_env("odd_api_env:OddFactory-v0", 1, "sync", {"max_episode_steps": 3})
    text = str(info.value)
    assert "did you mean 'max_episode_steps'" not in text, text
    assert "take it in the factory" in text and "TimeLimit" in text, text


def test_gymnasium_id_keeps_its_hint():
    with pytest.raises(CanterError, match=r"did you mean 'max_episode_steps'\?"):
        make_vec_env("CartPole-v1", 1, "sync", {"max_episode_step": 3})
