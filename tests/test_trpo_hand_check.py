"""TRPO's and NPG's policy step on a problem small enough to solve by hand (Schulman et al. 2015, appendix C).

One state (the observation 0, so only the actor's output bias moves), two actions, a linear actor: the
policy is ``softmax(b)``. With ``p = softmax(b)`` the Fisher matrix of the bias is
``F = p0 p1 [[1, -1], [-1, 1]]``, the surrogate's gradient for one row ``(a, A)`` is ``A (e_a - p)``, which is an
eigenvector of ``F`` with eigenvalue ``2 p0 p1``: conjugate gradient solves ``(F + damping I) x = g`` in one
iteration, ``x = g / (2 p0 p1 + damping)``, and the step ``sqrt(2 delta / x.(F + damping I)x) x`` moves the
two biases by equal and opposite amounts. Whether the line search keeps it depends on the exact KL of
two categorical distributions, written out below.
"""
from __future__ import annotations

import math

import gymnasium as gym
import pytest
import torch

from canter.algorithms.trpo import NPG, TRPO, NPGConfig, TRPOConfig
from canter.data.batch import RolloutBatch


def _two_action_kl(p0: float, shift: float) -> float:
    """KL(p || q) for two actions, ``q`` the policy whose logit difference is ``shift`` larger than ``p``'s."""
    q0 = 1.0 / (1.0 + math.exp(-(math.log(p0 / (1 - p0)) + shift)))
    return p0 * math.log(p0 / q0) + (1 - p0) * math.log((1 - p0) / (1 - q0))


def _step(cls, config, p0: float, rows: list[tuple[int, float]]) -> tuple[torch.Tensor, dict]:
    algo = cls(gym.spaces.Box(-1, 1, (1,)), gym.spaces.Discrete(2), config, seed=0)
    actor = algo.model.actor[0]
    with torch.no_grad():
        actor.bias.copy_(torch.tensor([math.log(p0 / (1 - p0)), 0.0]))
    obs = torch.zeros(len(rows), 1)
    actions = torch.tensor([a for a, _ in rows])
    with torch.no_grad():
        logp = torch.log_softmax(algo.model.action(obs), -1).gather(1, actions[:, None]).squeeze(1)
    batch = RolloutBatch(obs, actions, logp, torch.zeros(len(rows)), torch.tensor([adv for _, adv in rows]),
                         torch.zeros(len(rows)))
    before, weight = actor.bias.detach().clone(), actor.weight.detach().clone()
    stats = algo._policy_step(batch)
    assert torch.equal(actor.weight, weight)  # the observation is 0: no gradient reaches the weights
    return actor.bias.detach() - before, stats


def test_trpo_takes_the_whole_natural_step_inside_the_trust_region():
    """p = (1/2, 1/2), rows (0, +1) and (1, -1), damping 0.1, delta 0.01: g = (1/2, -1/2),
    x = g / 0.6, x.(F + 0.1 I)x = 5/6, so each bias moves by sqrt(0.02 / (5/6)) * 5/6 = 0.12910;
    the exact KL of that step, 0.00831, is inside the region and the surrogate rises: step fraction 1."""
    config = TRPOConfig(net_arch=[], normalize_advantage=False, target_kl=0.01, cg_damping=0.1)
    moved, stats = _step(TRPO, config, 0.5, [(0, 1.0), (1, -1.0)])
    half = math.sqrt(0.02 / (5 / 6)) * 5 / 6
    torch.testing.assert_close(moved, torch.tensor([half, -half]), rtol=1e-5, atol=1e-6)
    assert stats["step_accepted"] == 1.0 and stats["step_fraction"] == 1.0
    assert stats["kl"] == pytest.approx(_two_action_kl(0.5, 2 * half), rel=1e-4)
    # the surrogate mean(A * pi / pi_old) at the new policy: (q0 - q1) / (1/2) / 2
    q0 = 1 / (1 + math.exp(-2 * half))
    assert stats["policy_improvement"] == pytest.approx(q0 - (1 - q0), rel=1e-4)


def test_trpo_backtracks_where_the_quadratic_model_underestimates_the_kl():
    """p = (0.9, 0.1), one row (1, +1), no damping, delta 0.05: the natural step changes the logit difference by
    -sqrt(2 delta / (p0 p1)) = -1.0541, whose exact KL is 0.0660 > delta; 0.8 of it (KL 0.0400) is kept.
    NPG, which has no line search, takes the whole step."""
    shift = -math.sqrt(2 * 0.05 / (0.9 * 0.1))
    assert _two_action_kl(0.9, shift) > 0.05 > _two_action_kl(0.9, 0.8 * shift)  # the case is what it says
    common = dict(net_arch=[], normalize_advantage=False, target_kl=0.05, cg_damping=0.0)
    moved, stats = _step(TRPO, TRPOConfig(line_search_shrinking_factor=0.8, **common), 0.9, [(1, 1.0)])
    torch.testing.assert_close(moved, torch.tensor([0.4 * shift, -0.4 * shift]), rtol=1e-4, atol=1e-6)
    assert stats["step_accepted"] == 1.0 and stats["step_fraction"] == pytest.approx(0.8)
    assert stats["kl"] == pytest.approx(_two_action_kl(0.9, 0.8 * shift), rel=1e-3)
    moved, stats = _step(NPG, NPGConfig(**common), 0.9, [(1, 1.0)])
    torch.testing.assert_close(moved, torch.tensor([shift / 2, -shift / 2]), rtol=1e-4, atol=1e-6)
    assert stats["kl"] == pytest.approx(_two_action_kl(0.9, shift), rel=1e-3)
