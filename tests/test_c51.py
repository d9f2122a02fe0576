"""C51 (canter.algorithms.c51): the categorical projection, the loss, and learning."""
from __future__ import annotations

import json

import gymnasium as gym
import pytest
import torch

import canter
from canter.algorithms.c51 import categorical_projection
from canter.errors import CanterError
from canter.models.distributional import CategoricalQNetwork

SUPPORT = torch.tensor([-1.0, 0.0, 1.0])


def test_projection_by_hand():
    # all mass on 0, reward 0.5, no bootstrap (terminal): 0.5 lies halfway between atoms 0 and 1
    p = torch.tensor([[0.0, 1.0, 0.0]])
    out = categorical_projection(p, torch.tensor([0.5]), torch.tensor([0.0]), SUPPORT)
    torch.testing.assert_close(out, torch.tensor([[0.0, 0.5, 0.5]]))
    # discount 0.5, reward 0: atoms -1, 0, 1 move to -0.5, 0, 0.5; -0.5 splits over -1 and 0, 0.5 over 0 and 1
    p = torch.tensor([[0.2, 0.3, 0.5]])
    out = categorical_projection(p, torch.tensor([0.0]), torch.tensor([0.5]), SUPPORT)
    torch.testing.assert_close(out, torch.tensor([[0.1, 0.1 + 0.3 + 0.25, 0.25]]))
    # beyond the support: clipped to its ends; exactly on an atom: all of it there
    out = categorical_projection(torch.tensor([[0.5, 0.0, 0.5]]), torch.tensor([3.0]), torch.tensor([1.0]), SUPPORT)
    torch.testing.assert_close(out, torch.tensor([[0.0, 0.0, 1.0]]))
    out = categorical_projection(torch.tensor([[0.5, 0.5, 0.0]]), torch.tensor([1.0]), torch.tensor([1.0]), SUPPORT)
    torch.testing.assert_close(out, torch.tensor([[0.0, 0.5, 0.5]]))


def test_projection_keeps_mass_and_the_mean_inside_the_support():
    g = torch.Generator().manual_seed(0)
    support = torch.linspace(-10, 10, 51)
    p = torch.softmax(torch.randn(64, 51, generator=g), -1)
    r, d = torch.randn(64, generator=g), torch.rand(64, generator=g)
    out = categorical_projection(p, r, d, support)
    torch.testing.assert_close(out.sum(-1), torch.ones(64))
    # where nothing is clipped, projecting onto neighbours keeps the mean exactly: r + d * E[z]
    inside = ((r.abs() + d * 10) <= 10)
    torch.testing.assert_close((out * support).sum(-1)[inside], (r + d * (p * support).sum(-1))[inside])



@pytest.mark.parametrize("v_min, v_max, n", [(-10.0, 10.0, 51), (-1.0, 1.0, 3), (-3.3, 5.1, 11), (0.0, 7.0, 8)])
def test_projection_equals_the_brute_force_triangular_kernel(v_min, v_max, n):
    """Bellemare et al.'s projection written as a sum over every atom pair: atom j, moved to
    ``clip(r + d z_j)``, gives atom i the share ``max(0, 1 - |Tz_j - z_i| / dz)`` of its probability.
    Terminal rows (d = 0), rewards at and beyond both edges, and moved atoms landing exactly on atoms."""
    g = torch.Generator().manual_seed(n)
    support = torch.linspace(v_min, v_max, n, dtype=torch.float64)
    B = 24
    probs = torch.softmax(torch.randn(B, n, generator=g, dtype=torch.float64), -1)
    rewards = torch.randn(B, generator=g, dtype=torch.float64) * (v_max - v_min) / 2
    not_done = torch.rand(B, generator=g, dtype=torch.float64)
    not_done[:6] = 0.0  # terminal: everything on (the clipped) r
    rewards[3:6] = support[torch.tensor([0, 1, n - 1])]  # terminal on atoms, the edges included
    rewards[6:10] = torch.tensor([v_max, v_min, 2 * v_max + 1, 2 * v_min - 1], dtype=torch.float64)
    not_done[6:10] = torch.tensor([1.0, 1.0, 0.5, 0.99], dtype=torch.float64)  # pushed past the edges
    rewards[10:12], not_done[10:12] = 0.0, 1.0  # the identity: each atom onto itself
    moved = (rewards[:, None] + not_done[:, None] * support).clamp(v_min, v_max)  # [B, j]
    share = (1 - (moved[:, :, None] - support).abs() / (support[1] - support[0])).clamp(min=0)  # [B, j, i]
    expected = (probs[:, :, None] * share).sum(1)
    out = categorical_projection(probs, rewards, not_done, support)
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out[10:12], probs[10:12], rtol=1e-12, atol=1e-12)

def test_the_network_and_config():
    net = CategoricalQNetwork(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3), net_arch=[16], dueling=True,
                              n_atoms=11, v_min=-5, v_max=5)
    obs = torch.randn(2, 4)
    logits = net.logits(obs)
    assert logits.shape == (2, 3, 11)
    torch.testing.assert_close(net.value(obs), (torch.softmax(logits, -1) * torch.linspace(-5, 5, 11)).sum(-1))
    with pytest.raises(CanterError, match="'hparams.v_max' \\(1.0\\) must be greater than 'hparams.v_min' \\(2.0\\)"):
        canter.make_trainer("c51", "CartPole-v1", v_min=2.0, v_max=1.0)


@pytest.mark.parametrize("bounds", [dict(v_max=1e39), dict(v_min=-3e38, v_max=3e38)])
def test_a_support_beyond_float32_is_refused_in_one_line(bounds):
    """The atoms are float32: a bound (or the support's width) past float32's range once ended in a
    RuntimeError traceback from torch.linspace ("cannot be converted to type float without overflow")."""
    # a bound past float32 is refused as every hyperparameter's is (config.check_range); the width by C51
    with pytest.raises(CanterError, match="must (lie within 3.403e\\+38 of 0 and of each other|fit a 32-bit float)"):
        canter.make_trainer("c51", "CartPole-v1", **bounds)



@pytest.mark.parametrize("bounds", [dict(v_min=1e8, v_max=1e8 + 1), dict(v_min=1e7, v_max=1e7 + 10)])
def test_a_support_too_narrow_for_distinct_float32_atoms_is_refused_in_one_line(bounds):
    """51 float32 atoms from 1e8 to 1e8 + 1 are all 1e8: the first update divided by their spacing, 0,
    and died with a RuntimeError traceback from scatter_add_ (index -9223372036854775808 out of bounds);
    1e7 to 1e7 + 10 gave repeated atoms."""
    with pytest.raises(CanterError, match="too close for 51 distinct float32 atoms"):
        canter.make_trainer("c51", "CartPole-v1", **bounds)

def test_c51_learns_cartpole(tmp_path):
    run = tmp_path / "c51"
    canter.train("c51", env="CartPole-v1", seed=1, run_dir=run, quiet=True)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["best_eval_return"] >= 475, summary


@pytest.mark.slow
def test_c51_as_the_full_rainbow_solves_cartpole(tmp_path):
    """C51 with NoisyNet, dueling, Double DQN, 3-step returns and prioritized replay (Hessel et al.'s
    Rainbow) on the c51 preset: seed 1 measured 500 at 40k steps (54 s on a Xeon host, 2026-11-25)."""
    run = tmp_path / "rainbow"
    canter.train("c51", env="CartPole-v1", seed=1, noisy=True, dueling=True, double_q=True, n_step=3, prioritized=True,
                 run_dir=run, quiet=True)
    assert json.loads((run / "summary.json").read_text())["best_eval_return"] >= 475


def _two_rows(terminated: list[float]):
    """Two transitions into the same next observation, reward 0.5, discount 0.99."""
    from canter.data.batch import ReplayBatch

    nxt = torch.randn(1, 4, generator=torch.Generator().manual_seed(3)).repeat(2, 1)
    return ReplayBatch(nxt.clone(), torch.zeros(2, dtype=torch.long), torch.tensor([0.5, 0.5]), nxt,
                       torch.tensor(terminated), torch.full((2,), 0.99), torch.ones(2), torch.arange(2))


def test_the_target_bootstraps_after_a_truncation_not_after_a_termination():
    """A truncated transition is stored with terminated=0 (its real next observation), so only the
    terminated row's target is the reward alone."""
    algo = canter.make_trainer("c51", "CartPole-v1", seed=0, n_atoms=21, v_min=-10.0, v_max=10.0,
                               net_arch=[16]).agent.algorithm
    batch = _two_rows([1.0, 0.0])
    target = algo.td_target(batch)
    reward_only = torch.zeros(21)
    reward_only[10:12] = 0.5  # 0.5 lies halfway between the atoms 0 and 1
    torch.testing.assert_close(target[0], reward_only)
    probs = torch.softmax(algo.q_target.logits(batch.next_obs[1:]), -1)[0]
    greedy = probs[(probs * algo.q_target.support).sum(-1).argmax()]
    bootstrapped = categorical_projection(greedy[None], torch.tensor([0.5]), torch.tensor([0.99]), algo.q_target.support)
    torch.testing.assert_close(target[1:], bootstrapped)
    assert not torch.allclose(target[1], reward_only)


@pytest.mark.parametrize("v_min", [-1e9, -3e38])
def test_a_support_below_the_mask_value_still_acts_and_bootstraps_over_allowed_actions(v_min):
    """Masked actions' Q values were -1e8 (MASKED) whatever the support: with v_min -1e9 every allowed
    action's mean lay below it, so the greedy action and the bootstrapped one were disallowed ones."""
    import numpy as np

    from canter.algorithms.c51 import C51, C51Config
    from canter.data.batch import ReplayBatch
    from canter.envs.masks import MaskedBox

    algo = C51(MaskedBox(np.zeros(8), np.ones(8), mask_width=4), gym.spaces.Discrete(4),
               C51Config(net_arch=[8], n_atoms=11, v_min=v_min, v_max=0.0), seed=0)
    obs = torch.zeros(6, 8)
    obs[:, :4] = torch.rand(6, 4, generator=torch.Generator().manual_seed(0))
    obs[:, 4 + 2] = 1.0  # only action 2 is allowed
    assert algo.act(obs, deterministic=True).actions.tolist() == [2] * 6
    ones = torch.ones(6)
    batch = ReplayBatch(obs, torch.zeros(6, dtype=torch.long), ones * 0, obs, ones * 0, ones * 0.99, ones, ones)
    probs = torch.softmax(algo.q_target.logits(obs), -1)[:, 2]
    expected = categorical_projection(probs, ones * 0, ones * 0.99, algo.q_target.support)
    torch.testing.assert_close(algo.td_target(batch), expected)
