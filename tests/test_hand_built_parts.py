"""The four parts built by hand, as docs/architecture.md section 1 describes them (``PPO(obs_space, act_space, config,
seed=S)``, ``Agent(algorithm)``, ``OnPolicyTrainer(agent, env, eval_env, RunConfig(...))``): the trained agent saves
and loads as one that ``canter.make_trainer`` built (``agent.save`` was refused: 'this agent carries no run metadata')."""
from __future__ import annotations

import numpy as np

import canter
from canter.agents import Agent
from canter.algorithms.ppo import PPO, PPOConfig
from canter.config import RunConfig
from canter.envs import make_vec_env
from canter.trainers import OnPolicyTrainer


def test_a_hand_built_trainers_agent_saves_and_loads(tmp_path):
    env = make_vec_env("CartPole-v1", 2, "sync")
    algorithm = PPO(env.single_observation_space, env.single_action_space, PPOConfig(n_steps=32, batch_size=32), seed=0)
    agent = Agent(algorithm)
    trainer = OnPolicyTrainer(agent, env, None, RunConfig(algo="ppo", env="CartPole-v1", max_steps=128, eval_episodes=0))
    with trainer:
        records = list(trainer())
    assert records[-1].done and records[-1].step == 128
    agent.save(tmp_path / "hand")
    loaded = canter.load(tmp_path / "hand")
    assert loaded.metadata["step"] == 128 and loaded.run_config.algo == "ppo"
    assert loaded.algorithm.config.n_steps == 32
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict(obs), agent.predict(obs))
