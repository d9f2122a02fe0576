"""Truncated episodes bootstrap from their real final observation, not from the next episode's first, in the replay
paths that tests/test_time_limit_values.py cannot tell apart (its env's observation is constant, so the final and
the reset observations are the same) and tests/test_replay_streams.py does not drive: Ape-X's replay shards (explorer
rollouts stored step by step, a rollout's last observation included), hindsight replay (relabelled goals, the final
achieved goal), and a multi-agent env whose agents are truncated at different steps (shared and per-agent
policies). The envs count their steps in their observation (tests/counter_envs.py, tests/counter_agents.py): every
learned transition's next observation is its own plus the steps it spans, the final one of an episode included,
and none is terminated."""
from __future__ import annotations

import numpy as np
import pytest

import canter
import counter_envs  # noqa: F401  (registers StepCount-v0, GoalCount-v0)

GAMMA = 0.5


def _check(batch, seen: list) -> None:
    """Assert every transition of a learned ``batch`` spans the steps its discount says, from its observation
    to its next one (first column: the step count), and is not terminated; keep the next observations."""
    obs, nxt = batch.obs.numpy(), batch.next_obs.numpy()
    steps = np.round(np.log(batch.discounts.numpy()) / np.log(GAMMA)).astype(int)
    assert (steps >= 1).all()
    bad = np.flatnonzero((nxt[:, 0] - obs[:, 0] != steps) | (nxt[:, 1:] != obs[:, 1:]).any(1)
                         | (batch.terminated.numpy() != 0))
    assert not len(bad), f"transition {obs[bad[0]]} -> {nxt[bad[0]]} over {steps[bad[0]]} steps"
    seen.extend(nxt[:, 0].tolist())


def _spy(agent, seen: list) -> None:
    """Check every batch ``agent`` learns from (:func:`_check`), by ``learn`` and by ``learn_phase``."""
    learn, phase = agent.learn, getattr(agent, "learn_phase", None)
    agent.learn = lambda batch, *a, **k: (_check(batch, seen), learn(batch, *a, **k))[1]
    if phase is not None:
        agent.learn_phase = lambda batch, g, *a, **k: (_check(batch, seen), phase(batch, g, *a, **k))[1]


@pytest.mark.parametrize("algo, hparams", [("dqn", {"n_step": 3}), ("sac", {})])
def test_apex_shards_bootstrap_truncated_episodes_from_their_final_observation(algo, hparams):
    from canter.config import resolve_config
    from canter.distributed.explorer import Explorer
    from canter.distributed.pool import LocalPool
    from canter.distributed.trainers import ApeXTrainer
    from canter.envs import make_vec_env

    kwargs = {"act": "box" if algo == "sac" else "discrete"}
    run, cfg = resolve_config(algo, "counter_envs:StepCount-v0", n_envs=3, max_steps=240, eval_every=0, env_kwargs=kwargs,
                              hparams={"batch_size": 32, "learning_starts": 30, "train_freq": 5, "gamma": GAMMA,
                                       **hparams})
    env = make_vec_env(run.env, run.n_envs, env_kwargs=kwargs, training=True)
    agent = canter.make_agent(run, cfg, env.single_observation_space, env.single_action_space)
    trainer = ApeXTrainer(agent, LocalPool(Explorer(agent, env, seed=0)), None, run)
    seen: list = []
    _spy(agent, seen)
    list(trainer())
    trainer.close()
    assert 4.0 in seen and 0.0 not in seen  # final observations were learned from; no reset one is a next one


@pytest.mark.parametrize("strategy", ["future", "final", "episode"])
def test_hindsight_relabelling_of_truncated_episodes_of_seven_envs_keeps_their_final_observation(strategy):
    trainer = canter.make_trainer("dqn", "counter_envs:GoalCount-v0", seed=0, n_envs=7, max_steps=280, eval_every=0,
                                  hparams={"batch_size": 32, "learning_starts": 30, "train_freq": 7,
                                           "her_goals": 4, "her_strategy": strategy})
    list(trainer())
    trainer.close()
    buffer = trainer.buffer
    batch = buffer.sample(2000)
    col = {k: s.start for k, s in buffer.layout.columns.items()}
    obs, nxt = batch.obs.numpy(), batch.next_obs.numpy()
    t, goal = obs[:, col["observation"]], obs[:, col["desired_goal"]]
    assert (nxt[:, col["observation"]] == t + 1).all() and (nxt[:, col["desired_goal"]] == goal).all()
    relabelled = goal != 9
    assert 0.6 < relabelled.mean() < 0.95  # her_goals 4: 4/5 of the transitions
    # a relabelled goal is an achieved goal of the same episode: from the first step's (1) to the final one (4)
    lowest = {"future": t + 1, "final": np.full_like(t, 4), "episode": np.ones_like(t)}[strategy]
    assert (goal[relabelled] >= lowest[relabelled]).all() and (goal[relabelled] <= 4).all()
    assert 4.0 in goal[relabelled] and 4.0 in nxt[:, col["observation"]]
    reached = np.abs(nxt[:, col["achieved_goal"]] - goal) < 0.5
    assert (batch.rewards.numpy() == np.where(reached, 0.0, -1.0)).all()


@pytest.mark.parametrize("policies", ["shared", "agent"])
def test_agents_truncated_at_different_steps_bootstrap_from_their_own_final_observation(policies):
    pytest.importorskip("pettingzoo")
    trainer = canter.make_trainer("dqn", "pettingzoo:tests.counter_agents", seed=0, n_envs=3, max_steps=300,
                                  eval_every=0, policies=policies,
                                  hparams={"batch_size": 32, "learning_starts": 30, "train_freq": 6, "gamma": GAMMA,
                                           "n_step": 3})
    members = getattr(trainer.agent, "agents", None)
    seen: list = []
    for agent in (members.values() if members else [trainer.agent]):
        _spy(agent, seen)
    list(trainer())
    trainer.close()
    assert {3.0, 5.0} <= set(seen) and 0.0 not in seen  # agent_0's final [3, 0] and agent_1's [5, 1]
