"""QMIX on two agents in episodes of one or two steps (``tests/step_agents.py``), against values worked out by hand.

``agent_0`` earns 1 for action 1, ``agent_1`` 2 for action 0; agent ``i`` observes ``(1 + t) * e_i`` and the
state is ``[t, 10 + t]``. The replay must hold the team reward (the sum over the agents still in the episode),
the joint observation ``[agent_0's row; agent_1's row; state]``, a departed agent's final observation on the step
it leaves and zeros after, and the episode's end as terminated or truncated; the loss is the paper's squared TD
error of ``Q_tot``, written out here (agent network on ``[observation, one-hot id]``, mixer
``|W_2|^T elu(|W_1|^T q + b_1) + V(s)``), with the joint maximum of the target ``Q_tot`` by enumerating the 4
joint actions.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch.nn import functional as F

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.data.batch import ReplayBatch  # noqa: E402

ENV = "pettingzoo:tests.step_agents"
TABLE = ((0.0, 1.0), (2.0, 0.0))  # TABLE[i][a]: agent_i's reward for action a


def _collect(n_step: int = 1, gamma: float = 0.99, **env_kwargs):
    """A trainer that took 12 steps of random joint actions (one copy), closed."""
    with pytest.warns(UserWarning, match="never learns"):
        trainer = canter.make_trainer("qmix", ENV, env_kwargs=env_kwargs, seed=0, n_envs=1, max_steps=12,
                                      learning_starts=10_000, eval_every=0, n_step=n_step, gamma=gamma, huber=False,
                                      double_q=False, max_grad_norm=None, net_arch=[8], mixing_embed_dim=4,
                                      hypernet_dim=8)
    for _ in trainer():
        pass
    trainer.close()
    return trainer


def _row(t: int, alive: tuple[bool, bool], allowed: tuple[bool, bool] | None = None) -> list[list[float]]:
    """The joint observation at time ``t``: each agent's row (zeros once it has left), then the state; each row's
    last two columns are the alive mask (the env has no action masks): both actions where ``allowed`` (default:
    ``alive``), action 0 alone elsewhere, and zeros in the state's row."""
    mask = [[1.0, 1.0] if a else [1.0, 0.0] for a in (alive if allowed is None else allowed)]
    return [[(1 + t) * alive[0], 0.0, *mask[0]], [0.0, (1 + t) * alive[1], *mask[1]], [float(t), 10.0 + t, 0.0, 0.0]]


@pytest.mark.parametrize("truncate", [False, True])
def test_the_replay_holds_team_rewards_departures_and_the_teams_end(truncate):
    trainer = _collect(length=2, truncate=truncate)
    buf = trainer.buffer
    obs, actions = buf.obs[:12, 0], buf.actions[:12, 0]
    for t in range(12):  # episodes of 2 steps, then the reset-only step: 3 rows each
        phase = t % 3
        assert buf.valid[t, 0] == (phase < 2)
        if phase == 0:  # both act; agent_0 leaves (terminated), agent_1 goes on: not the team's end
            assert obs[t].tolist() == _row(0, (True, True))
            assert buf.rewards[t, 0] == TABLE[0][actions[t, 0]] + TABLE[1][actions[t, 1]]
            assert not buf.terminated[t, 0] and not buf.done[t, 0]
        elif phase == 1:  # agent_0's final observation is shown; its action is ignored (action 0 alone allowed)
            assert obs[t].tolist() == _row(1, (True, True), (False, True))
            assert actions[t, 0] == 0
            assert buf.rewards[t, 0] == TABLE[1][actions[t, 1]]
            assert buf.terminated[t, 0] == (not truncate) and buf.done[t, 0]  # done: terminated or truncated
        else:  # the final observation (the truncation's bootstrap reads it): agent_0's row is zeros; agent_1's mask
            # is kept where the time limit cut it (the bootstrap's max), action 0 alone where it terminated
            assert obs[t].tolist() == _row(2, (False, True), (False, truncate))


def test_n_step_returns_sum_the_team_rewards_to_the_teams_end():
    trainer = _collect(n_step=2, gamma=0.5, length=2)
    batch = trainer.buffer.sample(64)
    for obs, a, r, nxt, term, disc in zip(batch.obs, batch.actions, batch.rewards, batch.next_obs, batch.terminated,
                                          batch.discounts):
        assert nxt.tolist() == _row(2, (False, True), (False, False)) and term == 1.0  # both steps end at the team's end
        if obs.tolist() == _row(0, (True, True)):  # r1 + 0.5 r2: the second step's action is not in the batch
            assert float(disc) == 0.25
            assert float(r) - (TABLE[0][a[0]] + TABLE[1][a[1]]) in (0.0, 0.5 * 2.0)
        else:
            assert obs.tolist() == _row(1, (True, True), (False, True)) and float(disc) == 0.5
            assert float(r) == TABLE[1][a[1]]


def _utilities(net, obs: torch.Tensor) -> torch.Tensor:
    """``[2, n]``: each agent's Q values from its row (without its mask) and one-hot id."""
    return torch.stack([net.agent(torch.cat([obs[i, :2], F.one_hot(torch.tensor(i), 2).float()])) for i in range(2)])


def _q_tot(net, q: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
    hidden = F.elu(q @ net.hyper_w1(state).abs().reshape(2, -1) + net.hyper_b1(state))
    return hidden @ net.hyper_w2(state).abs() + net.hyper_b2(state)[0]


@pytest.mark.parametrize("truncate", [False, True])
def test_the_loss_on_one_step_episodes_is_the_papers_squared_td_error(truncate):
    trainer = _collect(gamma=0.9, length=1, truncate=truncate)
    algo = trainer.agent.algorithm
    with torch.no_grad():  # online and target networks differ
        for p in algo.q.parameters():
            p.add_(0.1)
    rows = np.flatnonzero(trainer.buffer.valid[:12, 0])
    batch = trainer.buffer.sample(16)
    assert len(rows) == 6 and set(batch.indices.tolist()) <= set(rows.tolist())
    losses = []
    for obs, a, r, nxt, term in zip(batch.obs, batch.actions, batch.rewards, batch.next_obs, batch.terminated):
        assert obs.tolist() == _row(0, (True, True)) and nxt.tolist() == _row(1, (True, True), (truncate, truncate))
        assert float(r) == TABLE[0][a[0]] + TABLE[1][a[1]] and bool(term) == (not truncate)
        with torch.no_grad():
            u = _utilities(algo.q_target, nxt[:2])
            best = max(_q_tot(algo.q_target, u[[0, 1], list(j)], nxt[2]) for j in itertools.product(range(2), repeat=2))
            y = r + (0.0 if not truncate else 0.9 * best)
        q = _utilities(algo.q, obs[:2])[[0, 1], a.tolist()]
        losses.append((_q_tot(algo.q, q, obs[2]) - y) ** 2)
    expected = float(torch.stack(losses).mean().detach())
    assert algo.learn(ReplayBatch(*batch))["loss"] == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("length", [1, 2])
def test_a_team_whose_every_agent_terminated_is_terminated_though_the_env_also_says_truncated(length):
    """PettingZoo allows an agent both flags (a game that ends on its time limit's step): terminated decides, as for
    one agent (gymnasium: no bootstrap past a terminal state). The team's episode was truncated, and QMIX
    bootstrapped ``Q_tot`` past the game's end."""
    trainer = _collect(length=length, both=True)
    buf = trainer.buffer
    ends = np.flatnonzero(buf.done[:12, 0])
    assert len(ends) == 12 // (length + 1) and buf.terminated[ends, 0].all()
    batch = trainer.buffer.sample(16)
    ended = batch.next_obs[:, 2, 0] == length  # the state's t: the transitions into the game's end
    torch.testing.assert_close(trainer.agent.algorithm.td_target(ReplayBatch(*batch))[ended], batch.rewards[ended])


@pytest.mark.slow
@pytest.mark.parametrize("masked", [False, True])
def test_qmix_learns_to_keep_every_agent_in_when_a_miss_ends_an_agents_episode(tmp_path, masked):
    """``tests/match_agents.py`` with ``team`` and ``miss_leaves``: every agent still in earns 1 only when all of them
    match, and one that misses leaves; the team earns 24 only when all three stay the 8 steps (random play: a
    step's reward 3 with chance 1/27, and each miss shrinks the team). ``masked``: the target and one other action
    allowed, and a departed agent's mask allows action 0 alone (tests/test_qmix_departed_agents.py)."""
    from canter.envs import make_vec_env
    from canter.trainers.evaluation import evaluate

    kwargs = {"n_agents": 3, "team": True, "miss_leaves": True, "masked": masked}
    agent = canter.train("qmix", env="pettingzoo:tests.match_agents", env_kwargs=kwargs, seed=0, max_steps=30_000,
                         n_envs=4, eval_every=2_000, target_reward=23, run_dir=tmp_path / "run", quiet=True)
    env = make_vec_env("pettingzoo:tests.match_agents", 2, policies="joint", env_kwargs=kwargs)
    result = evaluate(agent, env, 8, seed=1)
    env.close()
    assert result.mean_return >= 23 and min(result.lengths) == 8
