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


def test_an_agent_make_agent_built_evaluates_and_saves_as_canter_load_reads_it(tmp_path):
    """make_agent was handed the RunConfig, yet canter.evaluate of its agent was refused ('evaluate takes an agent that
    canter.train or canter.load returned') and agent.save said 'this agent carries no run metadata' (an SB3 user's
    model.save / evaluate_policy work on any model they built). It carries its run config now, saved at step 0."""
    import numpy as np

    run, cfg = resolve_config("ppo", "CartPole-v1", hparams={"lr": 0.01})
    env = gym.make("CartPole-v1")
    agent = canter.make_agent(run, cfg, env.observation_space, env.action_space)
    assert canter.evaluate(agent, env="CartPole-v1", episodes=2).episodes == 2
    assert canter.evaluate(agent, episodes=1).episodes == 1  # the run's own env
    loaded = canter.load(agent.save(tmp_path / "agent"))
    assert loaded.metadata["step"] == 0 and loaded.run_config.env == "CartPole-v1" and loaded.algorithm.config.lr == 0.01
    obs = np.random.default_rng(0).random((5, 4), dtype=np.float32)
    assert np.array_equal(loaded.predict(obs), agent.predict(obs))
