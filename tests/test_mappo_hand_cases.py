"""MAPPO on two agents in episodes of one or two steps (``tests/step_agents.py``), against values worked out by hand.

``agent_0`` earns 1 for action 1, ``agent_1`` 2 for action 0; agent ``i`` observes ``(1 + t) * e_i`` and the
state is ``[t, 10 + t]``. Each agent's row of the rollout is ``[[its observation, 0, 0], [state, one-hot id]]``;
its return is its own reward (not the team's), plus ``gamma`` times the centralised critic's value of its final
row where a time limit cut its episode, and nothing after it left (``gae_lambda`` 1: the discounted sum).
"""
from __future__ import annotations

import pytest
import torch

pytest.importorskip("pettingzoo")

import canter  # noqa: E402

ENV = "pettingzoo:tests.step_agents"
TABLE = ((0.0, 1.0), (2.0, 0.0))  # TABLE[i][a]: agent_i's reward for action a
GAMMA = 0.5


def _row(agent: int, t: int) -> list[list[float]]:
    """Agent ``agent``'s ``[2, 4]`` observation at time ``t``: its own row, then the state and its one-hot id."""
    own = [0.0, 0.0, 0.0, 0.0]
    own[agent] = 1.0 + t
    return [own, [float(t), 10.0 + t, float(agent == 0), float(agent == 1)]]


def _first_batch(**env_kwargs):
    """The first rollout's batch (one copy, 6 vector steps) and the algorithm, before it learned from it."""
    trainer = canter.make_trainer("mappo", ENV, env_kwargs=env_kwargs, seed=0, n_envs=1, max_steps=12, eval_every=0,
                                  n_steps=6, batch_size=12, gamma=GAMMA, gae_lambda=1.0, net_arch=[8],
                                  normalize_value=False)
    algo, got = trainer.agent.algorithm, []
    learn = algo.learn
    algo.learn = lambda batch: got.append(batch) or {}
    for _ in trainer():
        if got:
            break
    trainer.close()
    algo.learn = learn
    return got[0], algo


def _value(algo, agent: int, t: int) -> float:
    with torch.no_grad():
        return float(algo.value(torch.tensor([_row(agent, t)])))


@pytest.mark.parametrize("truncate", [False, True])
def test_one_step_returns_are_each_agents_own_reward_bootstrapped_only_at_a_time_limit(truncate):
    batch, algo = _first_batch(length=1, truncate=truncate)
    assert len(batch.obs) == 6  # 3 episodes of 2 agents; the reset-only steps are left out
    for obs, action, value, ret, adv in zip(batch.obs, batch.actions, batch.values, batch.returns, batch.advantages):
        agent = 0 if obs[0, 0] == 1 else 1
        assert obs.tolist() == _row(agent, 0)
        assert float(value) == pytest.approx(_value(algo, agent, 0), abs=1e-6)
        expected = TABLE[agent][int(action)] + (GAMMA * _value(algo, agent, 1) if truncate else 0.0)
        assert float(ret) == pytest.approx(expected, abs=1e-5)
        assert float(adv) == pytest.approx(expected - float(value), abs=1e-5)


def test_an_agent_that_leaves_keeps_its_own_return_and_the_other_bootstraps_at_its_time_limit():
    batch, algo = _first_batch(length=2, truncate=True)  # agent_0 terminates after step 1, agent_1 after step 2
    rows = [(o.tolist(), int(a), float(r)) for o, a, r in zip(batch.obs, batch.actions, batch.returns)]
    assert len(rows) == 6  # 2 episodes: agent_0 one step, agent_1 two
    firsts = [(a, r) for o, a, r in rows if o == _row(1, 0)]
    seconds = [(a, r) for o, a, r in rows if o == _row(1, 1)]
    assert [a for o, a, r in rows if o == _row(0, 0)] and len(firsts) == len(seconds) == 2
    for o, a, r in rows:
        if o == _row(0, 0):
            assert r == pytest.approx(TABLE[0][a])  # terminated: its reward alone
    for (a1, r1), (a2, r2) in zip(firsts, seconds):  # the same episode's two steps
        tail = TABLE[1][a2] + GAMMA * _value(algo, 1, 2)
        assert r2 == pytest.approx(tail, abs=1e-5)
        assert r1 == pytest.approx(TABLE[1][a1] + GAMMA * tail, abs=1e-5)
