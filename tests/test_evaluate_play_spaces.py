"""``canter.evaluate`` and ``canter.play.play`` given an env (another id, or ``env_kwargs``) whose spaces are not the
agent's: refused in one line, as ``canter eval`` and ``canter play`` refuse it. They acted in it without a word."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.play import play  # noqa: E402
from support import untrained_agent  # noqa: E402

MATCH = "pettingzoo:tests.match_agents"


class SevenActions(gym.Env):
    """CartPole's observation shape, 7 actions, episodes of 3 steps."""

    observation_space = gym.spaces.Box(-5, 5, (4,), np.float32)
    action_space = gym.spaces.Discrete(7)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(4, np.float32), 0.0, False, self.t >= 3, {}


@pytest.mark.parametrize("policies", ["shared", "agent", "joint"])
def test_a_multiagent_env_of_other_actions_is_refused(policies):
    """match_agents with factored=True: the same observations, MultiDiscrete([3, 2]) actions for Discrete(3) ones
    (QMIX, which refuses those: 3 agents, a joint observation of 4 rows for 3 and 3 actions for 2)."""
    algo = "qmix" if policies == "joint" else "ppo"
    agent = untrained_agent(algo, MATCH, **({} if policies == "joint" else {"policies": policies}))
    other = {"n_agents": 3} if policies == "joint" else {"factored": True}
    for act in (lambda: canter.evaluate(agent, episodes=1, env_kwargs=other), lambda: play(agent, env_kwargs=other)):
        with pytest.raises(canter.CanterError, match=f"checkpoint spaces do not match env '{MATCH}'"):
            act()
    assert len(canter.evaluate(agent, episodes=1).returns) >= 1  # its own env: evaluated as before
    assert len(play(agent)) == 1


def test_a_single_agent_env_of_other_actions_is_refused():
    gym.register("SevenActions-v0", entry_point=SevenActions)
    try:
        agent = untrained_agent("ppo", "CartPole-v1")
        for act in (lambda: canter.evaluate(agent, env="SevenActions-v0", episodes=1),
                    lambda: play(agent, env="SevenActions-v0")):
            with pytest.raises(canter.CanterError, match=r"do not match env 'SevenActions-v0': .*Discrete\(2\), env has"):
                act()
    finally:
        gym.registry.pop("SevenActions-v0", None)
