"""QMIX's update against a reference written here from the paper (Rashid et al. 2018, QMIX).

Agent ``i``'s utility ``Q_i(o_i, a_i)`` from its observation and one-hot id (one network shared by every
agent); ``Q_tot = w_2^T elu(W_1^T q + b_1) + V(s)`` with ``W_1 = |hyper_w1(s)|``, ``w_2 = |hyper_w2(s)|``, ``b_1``
and the two-layer ``V(s)`` from hypernetworks on the state (the submodules of a copy of canter's network,
wired here by hand, sample by sample). The TD target takes the maximum of the target ``Q_tot`` over every
joint action, enumerated (``n^k`` of them), not agent by agent: that the two agree is what monotonic mixing
promises; with double Q the online ``Q_tot``'s best joint action is valued by the target networks. Loss:
importance-weighted squared TD error or Huber. Compared: every parameter's gradient after one step.
"""
from __future__ import annotations

import copy
import itertools

import pytest
import torch
from torch.nn import functional as F

pytest.importorskip("pettingzoo")

from canter.algorithms.qmix import QMIX, QMIXConfig  # noqa: E402
from canter.data.batch import ReplayBatch  # noqa: E402
from canter.envs import make_vec_env  # noqa: E402

K, B = 3, 12


def _utilities(net, obs: torch.Tensor) -> torch.Tensor:
    """``[B, k, n]``: each agent's row (without its action mask) with its one-hot id through the shared agent
    network."""
    return torch.stack([net.agent(torch.cat([obs[:, i, :-net.mask_width], F.one_hot(torch.tensor(i), K).float().expand(len(obs), K)], -1))
                        for i in range(K)], 1)


def _q_tot(net, q: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
    """The mixing network, one sample at a time: ``q [k]`` and ``state [w]`` to a scalar."""
    w1 = net.hyper_w1(state).abs().reshape(K, -1)
    hidden = F.elu(q @ w1 + net.hyper_b1(state))
    return hidden @ net.hyper_w2(state).abs() + net.hyper_b2(state)[0]


def _best_joint(net, utilities: torch.Tensor, state: torch.Tensor) -> tuple[int, ...]:
    """The joint action of highest ``Q_tot``, by enumeration."""
    joint = list(itertools.product(range(utilities.shape[1]), repeat=K))
    values = [_q_tot(net, utilities[range(K), list(a)], state) for a in joint]
    return joint[int(torch.stack(values).argmax())]


@pytest.mark.parametrize("double_q, huber", [(False, False), (True, True)])
def test_qmix_gradient_matches_the_papers_mixing_and_joint_max_target(double_q, huber):
    env = make_vec_env("pettingzoo:tests.match_agents", 1, policies="joint", env_kwargs={"n_agents": K})
    # seed=0 seeds the initial weights too (they once followed the tests run before: the Huber branches went untested)
    algo = QMIX(env.single_observation_space, env.single_action_space,
                QMIXConfig(gamma=0.9, double_q=double_q, huber=huber, max_grad_norm=None, net_arch=[16],
                           mixing_embed_dim=8, hypernet_dim=16), seed=0)
    env.close()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():  # online and target networks differ
        for p in algo.q.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g))
    online, target = copy.deepcopy(algo.q), copy.deepcopy(algo.q_target)
    width, n_actions = algo.observation_space.shape[1], algo.n_actions
    obs, next_obs = 2 * torch.rand(B, K + 1, width, generator=g), 2 * torch.rand(B, K + 1, width, generator=g)
    for o in (obs, next_obs):  # the alive masks (the env has no action masks): every agent in, every action allowed
        o[:, :K, -n_actions:], o[:, K, -n_actions:] = 1.0, 0.0
    batch = ReplayBatch(obs, torch.randint(0, n_actions, (B, K), generator=g), 3 * torch.randn(B, generator=g), next_obs,
                        (torch.arange(B) % 4 == 0).float(), torch.full((B,), 0.81), 0.5 + torch.rand(B, generator=g),
                        torch.arange(B))
    losses, errors = [], []
    for b in range(B):
        with torch.no_grad():
            s_next = next_obs[b, K]
            target_u = _utilities(target, next_obs[b:b + 1])[0]
            chooser, chooser_u = (online, _utilities(online, next_obs[b:b + 1])[0]) if double_q else (target, target_u)
            best = _best_joint(chooser, chooser_u, s_next)
            y = batch.rewards[b] + 0.81 * (1 - batch.terminated[b]) * _q_tot(target, target_u[range(K), list(best)], s_next)
        q = _utilities(online, obs[b:b + 1])[0][range(K), batch.actions[b]]
        d = _q_tot(online, q, obs[b, K]) - y
        errors.append(float(d.abs()))
        losses.append(batch.weights[b] * ((0.5 * d * d if d.abs() < 1 else d.abs() - 0.5) if huber else d * d))
    loss = torch.stack(losses).mean()
    assert min(errors) < 1 < max(errors)  # both branches of the Huber loss
    loss.backward()
    stats = algo.learn(batch)
    assert stats["loss"] == pytest.approx(float(loss.detach()), rel=1e-5)
    for (name, ours), theirs in zip(algo.q.named_parameters(), online.parameters()):
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-4, atol=1e-6, msg=lambda m, n=name: f"grad {n}: {m}")
