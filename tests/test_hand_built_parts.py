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


def test_a_hand_built_trainer_saves_its_algorithm_under_its_own_name(tmp_path):
    """A RunConfig left at its default ``algo: ppo`` around SAC: the checkpoint said 'ppo' with SAC's hyperparameters,
    and canter.load refused it ('hparams.buffer_size, which ... PPOConfig no longer has')."""
    from canter.algorithms.sac import SAC, SACConfig
    from canter.trainers import OffPolicyTrainer

    env = make_vec_env("Pendulum-v1", 1, "sync")
    sac = SAC(env.single_observation_space, env.single_action_space, SACConfig(learning_starts=16, batch_size=16),
              seed=0)
    agent = Agent(sac)
    with OffPolicyTrainer(agent, env, None, RunConfig(env="Pendulum-v1", max_steps=32, eval_episodes=0)) as trainer:
        list(trainer())
    agent.save(tmp_path / "sac")
    loaded = canter.load(tmp_path / "sac")
    assert loaded.run_config.algo == "sac" and isinstance(loaded.algorithm, SAC)


def test_a_hand_built_algorithm_whose_config_is_no_dataclass_still_trains(tmp_path):
    """Resolving the hand-built trainer's config (dataclasses.asdict) raised TypeError at the first iteration, where
    the trainer trained before (its agent's save refused); it trains, and the save is refused in one line."""
    import dataclasses
    import types

    import pytest

    env = make_vec_env("CartPole-v1", 2, "sync")
    algorithm = PPO(env.single_observation_space, env.single_action_space, PPOConfig(n_steps=32, batch_size=32), seed=0)
    algorithm.config = types.SimpleNamespace(**dataclasses.asdict(algorithm.config))  # a user's plain config object
    agent = Agent(algorithm)
    with OnPolicyTrainer(agent, env, None, RunConfig(max_steps=64, eval_episodes=0)) as trainer:
        assert list(trainer())[-1].step == 64
    with pytest.raises(canter.CanterError, match="this agent carries no run metadata"):
        agent.save(tmp_path / "plain")


def test_a_multi_policy_members_agent_saves_no_config_of_its_own(tmp_path):
    """A policy's agent saved while a multi-policy run trains it: its member trainer's own run (policies: type, the
    member's seed and share of the steps) was saved, which canter.load failed on ('Box' object has no attribute
    'spaces'); the save is refused in one line, as before such configs were resolved."""
    import pytest

    trainer = canter.make_trainer("ppo", "pettingzoo:tests.mixed_agents", policies="type", max_steps=96, n_envs=1,
                                  n_steps=16, batch_size=16, n_epochs=1, eval_episodes=0)
    with trainer:
        list(trainer())
        with pytest.raises(canter.CanterError, match="this agent carries no run metadata"):
            trainer.agent.agents["speaker"].save(tmp_path / "speaker")
    assert not (tmp_path / "speaker.json").exists()
