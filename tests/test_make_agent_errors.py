"""``canter.make_agent``, a public name, takes a RunConfig, the algorithm's config and the env's spaces; an SB3 user's
``canter.make_agent("ppo", "CartPole-v1")`` (``PPO("MlpPolicy", env)``) was a TypeError or an AttributeError
traceback ('str' object has no attribute 'policies'); it is one line naming what to call instead."""
import gymnasium as gym
import pytest

import canter
from canter.config import resolve_config
from canter.errors import CanterError

SPACES = gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2)


@pytest.mark.parametrize("args", [
    ("ppo", "CartPole-v1", *SPACES),                     # an algorithm and an env id: 'str' has no attribute 'policies'
    ("ppo", None, *SPACES),
    (None, None, *SPACES),
])
def test_make_agent_without_a_run_config_is_one_line_naming_make_trainer(args):
    with pytest.raises(CanterError, match=r"first argument is a RunConfig.*make_trainer\('ppo', 'CartPole-v1'\)\.agent"):
        canter.make_agent(*args)


@pytest.mark.parametrize("cfg", [{}, None, {"lr": 1e-3}])
def test_make_agent_with_a_dict_for_the_algorithm_config_is_one_line(cfg):
    run, _ = resolve_config("ppo", "CartPole-v1")
    with pytest.raises(CanterError, match=r"second argument is the algorithm's config.*resolve_config"):
        canter.make_agent(run, cfg, *SPACES)


def test_make_agent_missing_arguments_is_one_line():
    with pytest.raises(CanterError, match=r"canter\.make_agent\(\) missing 2 required positional arguments"):
        canter.make_agent("ppo", "CartPole-v1")


def test_make_agent_as_documented_still_builds_an_agent():
    run, cfg = resolve_config("ppo", "CartPole-v1")
    agent = canter.make_agent(run, cfg, *SPACES)
    assert agent.predict([0.0, 0.0, 0.0, 0.0]) in (0, 1)
