"""Offline datasets: what ``collect()`` checks before it runs a policy (split from test_offline_collect.py)."""
from __future__ import annotations

import gymnasium as gym
import pytest

from canter.api import make_agent
from canter.config import resolve_config
from canter.data.dataset import collect
from canter.errors import CanterError


def test_collect_refuses_an_agent_trained_on_other_spaces():
    """``canter collect RUN --env OTHER`` refused it; ``collect()`` from Python ran the policy: a MountainCar-v0
    agent's Discrete actions reached MountainCarContinuous-v0 (an IndexError inside the env), and where the env
    took them they were stored as the other space's actions, silently."""
    env = gym.make("MountainCar-v0")
    run, cfg = resolve_config("dqn", "MountainCar-v0")
    agent = make_agent(run, cfg, env.observation_space, env.action_space)
    env.close()
    with pytest.raises(CanterError, match="checkpoint spaces do not match env 'MountainCarContinuous-v0'.*Discrete"):
        collect("MountainCarContinuous-v0", 50, agent)
    assert len(collect("MountainCar-v0", 5, agent)) == 5
