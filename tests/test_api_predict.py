"""predict and sample as a Stable-Baselines3 user calls them: the deterministic keyword, a loaded DQN's epsilon,
gSDE's training matrices left alone, one observation refused by sample."""
import numpy as np
import pytest
import torch

import canter
from canter.errors import CanterError
from support import untrained_agent as _agent

# the agents here are built by short trainers that never train: their budget warnings say nothing
pytestmark = pytest.mark.filterwarnings("ignore:.*(less than one (rollout|training phase)|never learns).*")


def test_predict_takes_sb3s_deterministic_keyword(tmp_path):
    """``agent.predict(obs, deterministic=True)`` (Stable-Baselines3's spelling) raised a TypeError."""
    agent = canter.train("ppo", "CartPole-v1", max_steps=256, n_envs=2, n_steps=64, batch_size=64, eval_every=0, eval_episodes=1,
                         run_dir=tmp_path / "run", seed=0)
    obs = np.zeros((200, 4), np.float32)
    assert (agent.predict(obs, deterministic=True) == agent.predict(obs)).all()
    sampled = agent.predict(obs, deterministic=False)  # the barely trained policy is near uniform
    assert sampled.shape == (200,) and 0 < sampled.sum() < 200


def test_a_loaded_dqn_samples_with_the_epsilon_it_was_saved_with(tmp_path):
    """``canter.load(run).predict(obs, deterministic=False)`` of a DQN explored with the initial epsilon
    (1.0: uniformly random actions, 52% differing from the greedy ones on CartPole) instead of the saved one,
    as SB3's loaded DQN.predict uses the saved exploration rate."""
    agent = canter.train("dqn", "CartPole-v1", max_steps=600, n_envs=1, eval_every=0, eval_episodes=1,
                         run_dir=tmp_path / "run", seed=0, learning_starts=100, exploration_fraction=0.5,
                         exploration_final_eps=0.05)
    assert agent.algorithm.epsilon == pytest.approx(0.05)
    loaded = canter.load(tmp_path / "run")
    assert loaded.algorithm.epsilon == pytest.approx(0.05)
    obs = np.random.default_rng(0).normal(size=(2000, 4)).astype(np.float32)
    assert (loaded.predict(obs, deterministic=False) != loaded.predict(obs)).mean() < 0.1


def test_predicts_deterministic_flag_is_keyword_only():
    """``predict(obs, False)`` sampled for a plain agent and set ``episode_start`` for a recurrent one (and in
    SB3 the second argument is ``state``): ``deterministic`` is keyword-only on every agent."""
    import inspect

    from canter.agents.agent import Agent
    from canter.agents.multi import MultiPolicyAgent
    from canter.agents.recurrent import RecurrentAgent

    for cls in (Agent, RecurrentAgent, MultiPolicyAgent):
        assert inspect.signature(cls.predict).parameters["deterministic"].kind is inspect.Parameter.KEYWORD_ONLY, cls


def test_sampling_predict_leaves_the_training_gsde_matrices_alone():
    """SAC's gSDE matrices are the training envs' exploration noise too: a sampling ``predict`` of one
    observation replaced the 2 envs' matrices by a 1-row draw and advanced the resampling count."""
    agent = _agent("sac", "Pendulum-v1", n_envs=2, use_sde=True)
    a = agent.algorithm
    a.act(torch.zeros(2, 3))  # the training envs' draw
    weights, calls = a.sde_weights, a.act_calls
    agent.predict(np.zeros(3, np.float32), deterministic=False)
    assert a.sde_weights is weights and a.act_calls == calls


@pytest.mark.parametrize("algo,env_id", [("dqn", "CartPole-v1"), ("ppo", "CartPole-v1"), ("recurrent_ppo", "CartPole-v1")])
def test_sample_refuses_one_observation_in_one_line(algo, env_id):
    """``agent.sample(obs)`` with one observation (sample takes the training envs' batch): DQN took the 4 numbers of
    a CartPole observation as 4 observations and returned 4 actions; PPO and SAC raised NumPy's or torch's
    shape errors."""
    agent = _agent(algo, env_id)
    obs = np.zeros(4, np.float32)
    with pytest.raises(CanterError, match=r"sample takes a batch .* \(B, \*\(4,\)\).*use predict\(obs, determ"):
        agent.sample(obs)
    actions, _, _ = agent.sample(obs[None])
    assert np.shape(actions) == (1,)
