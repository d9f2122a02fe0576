"""A hand-built trainer whose ``RunConfig()`` leaves ``env`` at its default: its agent is saved with the env it
trained on (``env: CartPole-v1`` was saved for a Pendulum run, and ``canter.evaluate`` of the loaded agent refused
it: 'checkpoint spaces do not match env 'CartPole-v1''), or refused in one line where that env names no id."""
from __future__ import annotations

import gymnasium as gym
import pytest

import canter
from canter.agents import Agent
from canter.algorithms.sac import SAC, SACConfig
from canter.config import RunConfig
from canter.envs import make_vec_env
from canter.envs.vector import VecEnv
from canter.trainers import OffPolicyTrainer
from canter.trainers.agent_metadata import trained_env


def _train_sac(env, run):
    agent = Agent(SAC(env.single_observation_space, env.single_action_space,
                      SACConfig(learning_starts=16, batch_size=16), seed=0))
    with OffPolicyTrainer(agent, env, None, run) as trainer:
        list(trainer())
    return agent


def test_a_default_run_config_saves_the_env_the_trainer_trained_on(tmp_path):
    agent = _train_sac(make_vec_env("Pendulum-v1", 1, "sync"), RunConfig(max_steps=32, eval_episodes=0))
    agent.save(tmp_path / "sac")
    loaded = canter.load(tmp_path / "sac")
    assert loaded.metadata["env"] == "Pendulum-v1" and loaded.run_config.env == "Pendulum-v1"
    result = canter.evaluate(loaded, episodes=1)
    assert len(result.returns) == 1 and result.lengths == [200]


def test_an_unnamed_env_under_a_default_run_config_is_refused_in_one_line(tmp_path):
    """A vector env that names no id (no env_id, no Gymnasium spec): the save is refused, nothing is written."""
    class Unnamed(gym.Wrapper):
        spec = None

    inner = gym.vector.SyncVectorEnv([lambda: Unnamed(gym.make("Pendulum-v1"))],
                                     autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP)
    agent = _train_sac(VecEnv(inner), RunConfig(max_steps=32, eval_episodes=0))
    with pytest.raises(canter.CanterError, match=r"env was left at its default 'CartPole-v1'.*RunConfig\(env=") as exc:
        agent.save(tmp_path / "sac")
    assert "\n" not in str(exc.value) and not list(tmp_path.iterdir())


def test_the_env_id_a_hand_built_run_is_saved_with():
    assert trained_env("my_pkg.envs:Foo-v0", "Foo-v0") == "my_pkg.envs:Foo-v0"  # the run named it: its prefix kept
    assert trained_env("Acrobot-v1", "Pendulum-v1") == "Acrobot-v1"  # named by the user: as before
    assert trained_env("CartPole-v1", "Pendulum-v1") == "Pendulum-v1"
    assert trained_env("CartPole-v1", "my_pkg:CartPole-v1") == "my_pkg:CartPole-v1"  # the env's module kept
    assert trained_env("CartPole-v1", "CartPole-v1") == "CartPole-v1"
    assert trained_env("CartPole-v1", None) is None


def test_a_default_run_config_evaluates_and_plays_the_env_the_trainer_trains_on():
    """f135fc15 saved the env trained on, but ``canter.evaluate`` and ``canter.play`` of the live agent read
    ``agent.run_config.env``, still the default: 'checkpoint spaces do not match env 'CartPole-v1'' for a Pendulum
    run, before its first iteration and after its end."""
    from canter.play import play

    env = make_vec_env("Pendulum-v1", 1, "sync")
    agent = Agent(SAC(env.single_observation_space, env.single_action_space,
                      SACConfig(learning_starts=16, batch_size=16), seed=0))
    with OffPolicyTrainer(agent, env, None, RunConfig(max_steps=32, eval_episodes=0)) as trainer:
        assert canter.evaluate(agent, episodes=1).lengths == [200]  # not run yet
        list(trainer())
    assert canter.evaluate(agent, episodes=1).lengths == [200] and len(play(agent, episodes=1)) == 1
    assert agent.run_config.env == "Pendulum-v1" and trainer.run.env == "CartPole-v1"  # the user's RunConfig kept
