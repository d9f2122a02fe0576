"""A hand-built trainer (``RunConfig`` leaving ``n_envs`` None) on a multi-agent env tells its rows as the env's copies'
agents: since 886aa349 its budget warning said '4 agent rows (4 env copies x 1 agent)' of 2 copies x 2 agents."""
from __future__ import annotations

import pytest

from canter.agents import Agent
from canter.config import RunConfig
from canter.envs import make_vec_env
from canter.errors import CanterWarning


def test_a_hand_built_multiagent_trainer_tells_copies_and_agents():
    pytest.importorskip("pettingzoo")
    from canter.algorithms.ppo import PPO, PPOConfig
    from canter.trainers import OnPolicyTrainer

    env = make_vec_env("pettingzoo:tests.match_agents", 2, "sync")
    agent = Agent(PPO(env.single_observation_space, env.single_action_space, PPOConfig(n_steps=32, batch_size=32),
                      seed=0))
    run = RunConfig(algo="ppo", env="pettingzoo:tests.match_agents", max_steps=16, eval_episodes=0)
    with pytest.warns(CanterWarning, match=r"n_steps 32 x 4 agent rows \(2 env copies x 2 agents\)"):
        trainer = OnPolicyTrainer(agent, env, None, run)
    with trainer:
        assert trainer.env_copies == 2
