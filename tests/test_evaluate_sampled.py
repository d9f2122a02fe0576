"""canter.evaluate(agent, deterministic=False): the policy's samples, as Stable-Baselines3's evaluate_policy takes
the keyword."""
import numpy as np
import pytest
import torch

import canter
from canter.errors import CanterError


def test_evaluate_samples_the_policy_with_deterministic_false(tiny_ppo):
    """canter.evaluate had no deterministic=False (SB3's evaluate_policy keyword, used for policies whose argmax gets
    stuck): TypeError. The samples come from a stream seeded with the evaluation's seed, not the agent's own."""
    tiny_ppo = {**tiny_ppo, "max_steps": 128}
    agent = canter.train("ppo", "CartPole-v1", run_dir=None, **tiny_ppo)
    own = agent.algorithm.generator.get_state()
    sampled = canter.evaluate(agent, episodes=6, seed=1, deterministic=False)
    assert torch.equal(agent.algorithm.generator.get_state(), own)
    assert canter.evaluate(agent, episodes=6, seed=1, deterministic=False).returns == sampled.returns
    assert sampled.returns != canter.evaluate(agent, episodes=6, seed=1).returns
    with pytest.raises(CanterError, match="deterministic must be True or False, got 'no'"):
        canter.evaluate(agent, deterministic="no")


def test_evaluate_with_deterministic_false_starts_a_recurrent_agents_memory_at_each_episode(tiny_ppo):
    """The samples of a recurrent agent come from its exploring memory, zeroed where an episode begins (the first
    step of each copy, and the step after each episode's end), so a second evaluation with the same seed, after the
    memory was filled with other values, gives the same returns."""
    recurrent = canter.train("recurrent_ppo", "CartPole-v1", run_dir=None, **{**tiny_ppo, "max_steps": 128})
    first = canter.evaluate(recurrent, episodes=3, seed=2, deterministic=False)
    h, c = recurrent.memory["explore"]
    recurrent.memory["explore"] = (torch.full_like(h, 5.0), torch.full_like(c, -5.0))
    starts, explore = [], recurrent.explore

    def spy(obs, generator=None, episode_start=None):
        starts.append(np.array(episode_start, dtype=bool))
        return explore(obs, generator=generator, episode_start=episode_start)

    recurrent.explore = spy
    assert canter.evaluate(recurrent, episodes=3, seed=2, deterministic=False).returns == first.returns
    assert starts[0].all() and sum(int(s.sum()) for s in starts[1:]) >= 1  # a new episode after one ended


def test_evaluate_with_deterministic_false_is_seeded_for_several_policies():
    """A multi-policy agent (``policies: agent``) sampled from each policy's own stream: a second evaluation with the
    same seed gave other returns ([3, 2, 1, 3, 7, 2] then [3, 2, 2, 5, 4, 5] on match_agents) and moved the
    policies' streams. Each policy now draws from a generator of its own seeded from the evaluation's seed."""
    from support import ENV, untrained_agent

    agent = untrained_agent("ppo", ENV, policies="agent", n_envs=2, n_steps=16, batch_size=32)
    own = {p: a.algorithm.generator.get_state() for p, a in agent.agents.items()}
    first = canter.evaluate(agent, episodes=4, seed=3, deterministic=False).returns
    assert all(torch.equal(a.algorithm.generator.get_state(), own[p]) for p, a in agent.agents.items())
    assert canter.evaluate(agent, episodes=4, seed=3, deterministic=False).returns == first
    assert canter.evaluate(agent, episodes=4, seed=4, deterministic=False).returns != first


def test_evaluate_takes_a_begin_episodes_override_without_the_exploring_keyword():
    """A RecurrentAgent subclass overriding begin_episodes(self, starts, training=False), as written before the
    exploring keyword, broke canter.evaluate(agent, deterministic=False) with a TypeError (evaluate zeroes the
    exploring memory at its end with exploring=True). The override is called as it was written, and the base class
    zeroes the exploring memory: the same returns as the base class's, and that memory empty after."""
    from support import untrained_agent

    from canter.agents.recurrent import RecurrentAgent

    calls = []

    class OldStyle(RecurrentAgent):
        def begin_episodes(self, starts, training=False):
            calls.append(training)
            super().begin_episodes(starts, training)

    agent = untrained_agent("recurrent_ppo", "CartPole-v1", n_envs=2, n_steps=32, batch_size=64)
    base = canter.evaluate(agent, episodes=2, seed=0, deterministic=False).returns
    agent.__class__ = OldStyle
    assert canter.evaluate(agent, episodes=2, seed=0, deterministic=False).returns == base
    assert calls and not any(calls)
    assert all(float(t.abs().sum()) == 0 for t in agent.memory["explore"])
