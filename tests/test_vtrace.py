"""V-trace targets against hand-computed values, the paper's sum definition, n-step returns and GAE."""
import math
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch

from canter.algorithms.impala import IMPALA
from canter.config import build
from canter.data.rollout import compute_gae
from canter.distributed.vtrace import vtrace


def _t(x) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float64)


def test_two_step_example_computed_by_hand():
    # gamma 0.9, V = [1, 2], V(bootstrap) = 3, rewards 1, pi/mu = [2, 0.5], all clips 1:
    # rho = c = [1, 0.5]; delta_0 = 1 * (1 + 0.9*2 - 1) = 1.8; delta_1 = 0.5 * (1 + 0.9*3 - 2) = 0.85
    # v_1 = 2 + 0.85 = 2.85; v_0 = 1 + 1.8 + 0.9 * 1 * (2.85 - 2) = 3.565
    # A_0 = min(1, 2) * (1 + 0.9 * v_1 - 1) = 2.565; A_1 = 0.5 * (1 + 0.9 * 3 - 2) = 0.85
    zeros = _t([[0.0], [0.0]])
    out = vtrace(_t([[math.log(2.0)], [math.log(0.5)]]), _t([[1.0], [1.0]]), _t([[1.0], [2.0]]), _t([3.0]),
                 zeros, zeros, gamma=0.9)
    assert out.vs[:, 0].tolist() == pytest.approx([3.565, 2.85])
    assert out.pg_advantages[:, 0].tolist() == pytest.approx([2.565, 0.85])


def test_on_policy_targets_are_n_step_returns():
    rng = np.random.default_rng(0)
    T, N, gamma = 6, 3, 0.97
    rewards, values, boot = rng.normal(size=(T, N)), rng.normal(size=(T, N)), rng.normal(size=N)
    zeros = torch.zeros(T, N, dtype=torch.float64)
    out = vtrace(zeros, _t(rewards), _t(values), _t(boot), zeros, zeros, gamma=gamma)
    for s in range(T):
        n_step = sum(gamma ** (k - s) * rewards[k] for k in range(s, T)) + gamma ** (T - s) * boot
        assert out.vs[s].numpy() == pytest.approx(n_step)
        next_v = out.vs[s + 1].numpy() if s + 1 < T else boot
        assert out.pg_advantages[s].numpy() == pytest.approx(rewards[s] + gamma * next_v - values[s])


def test_off_policy_targets_match_the_papers_sum_definition():
    """v_s = V(x_s) + sum_t gamma^(t-s) (c_s...c_{t-1}) rho_t delta_t, with clipping and lambda."""
    rng = np.random.default_rng(1)
    T, N, gamma, lam, rho_bar, c_bar, pg_bar = 7, 4, 0.95, 0.9, 1.2, 0.8, 1.5
    log_rhos = rng.normal(scale=0.7, size=(T, N))  # ratios well above and below every clip
    rewards, values, boot = rng.normal(size=(T, N)), rng.normal(size=(T, N)), rng.normal(size=N)
    zeros = torch.zeros(T, N, dtype=torch.float64)
    out = vtrace(_t(log_rhos), _t(rewards), _t(values), _t(boot), zeros, zeros, gamma, lam, rho_bar, c_bar, pg_bar)
    ratio = np.exp(log_rhos)
    rho, c = np.minimum(rho_bar, ratio), lam * np.minimum(c_bar, ratio)
    v_next = np.concatenate([values[1:], boot[None]])
    expected = np.zeros((T, N))
    for s in range(T):
        total = values[s].copy()
        for t in range(s, T):
            trace = np.prod(c[s:t], axis=0) if t > s else np.ones(N)
            total += gamma ** (t - s) * trace * rho[t] * (rewards[t] + gamma * v_next[t] - values[t])
        expected[s] = total
    np.testing.assert_allclose(out.vs.numpy(), expected, rtol=1e-10)
    vs_next = np.concatenate([expected[1:], boot[None]])
    pg = np.minimum(pg_bar, ratio) * (rewards + gamma * vs_next - values)
    np.testing.assert_allclose(out.pg_advantages.numpy(), pg, rtol=1e-10)


def test_episode_ends_terminated_cuts_truncated_bootstraps_from_final_observation():
    # NEXT_STEP layout, one env: the episode ends at row 1; row 2 holds its final observation
    # (an autoreset row, masked by callers); a new episode runs from row 3.
    gamma = 0.5
    rewards = _t([[1.0], [2.0], [0.0], [4.0]])
    values = _t([[10.0], [20.0], [30.0], [40.0]])  # values[2] = V(final obs of the first episode)
    boot, zero = _t([50.0]), torch.zeros(4, 1, dtype=torch.float64)
    dones = _t([[0.0], [1.0], [0.0], [0.0]])
    term = vtrace(zero, rewards, values, boot, dones, dones, gamma)
    assert term.vs[:2, 0].tolist() == pytest.approx([1 + 0.5 * 2, 2])  # no bootstrap after termination
    assert term.pg_advantages[1, 0].item() == pytest.approx(2 - 20)
    trunc = vtrace(zero, rewards, values, boot, zero, dones, gamma)
    assert trunc.vs[:2, 0].tolist() == pytest.approx([1 + 0.5 * (2 + 0.5 * 30), 2 + 0.5 * 30])
    assert trunc.pg_advantages[1, 0].item() == pytest.approx(2 + 0.5 * 30 - 20)
    assert trunc.vs[0, 0] != term.vs[0, 0]  # treating a time limit as termination would be wrong
    assert term.vs[3, 0].item() == pytest.approx(4 + 0.5 * 50)  # the next episode is unaffected



def test_off_policy_targets_with_episode_ends_match_the_sum_definition_per_episode():
    """Clipped rho and c with terminations and truncations inside the rollout (one on its last row):
    each row's target is the paper's sum over its own episode only, ending in 0 after a termination
    and in V(final observation) (the next row's value, or the bootstrap value) after a truncation."""
    rng = np.random.default_rng(3)
    T, N, gamma, lam, rho_bar, c_bar, pg_bar = 9, 4, 0.9, 0.8, 1.1, 0.7, 1.4
    log_rhos = rng.normal(scale=0.8, size=(T, N))
    rewards, values, boot = rng.normal(size=(T, N)), rng.normal(size=(T, N)), rng.normal(size=N)
    dones = (rng.random((T, N)) < 0.25).astype(float)
    terminated = dones * (rng.random((T, N)) < 0.5)
    dones[-1, 0], terminated[-1, 0] = 1.0, 0.0  # truncated on the last row: bootstraps from boot
    assert terminated.sum() > 1 and (dones - terminated).sum() > 1
    out = vtrace(_t(log_rhos), _t(rewards), _t(values), _t(boot), _t(terminated), _t(dones), gamma, lam, rho_bar,
                 c_bar, pg_bar)
    ratio = np.exp(log_rhos)
    rho, c = np.minimum(rho_bar, ratio), lam * np.minimum(c_bar, ratio)
    v_after = np.concatenate([values[1:], boot[None]]) * (1 - terminated)  # value after each step's transition
    vs, pg = np.zeros((T, N)), np.zeros((T, N))
    for n in range(N):
        for s in range(T):
            end = s
            while end < T - 1 and not dones[end, n]:
                end += 1
            vs[s, n] = values[s, n] + sum(
                gamma ** (t - s) * np.prod(c[s:t, n]) * rho[t, n] * (rewards[t, n] + gamma * v_after[t, n] - values[t, n])
                for t in range(s, end + 1))
    for n in range(N):
        for s in range(T):
            inside = s < T - 1 and not dones[s, n]
            v_next = vs[s + 1, n] if inside else v_after[s, n]  # v_{s+1}, or what the episode ends in
            pg[s, n] = min(pg_bar, ratio[s, n]) * (rewards[s, n] + gamma * v_next - values[s, n])
    np.testing.assert_allclose(out.vs.numpy(), vs, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out.pg_advantages.numpy(), pg, rtol=1e-12, atol=1e-12)

@pytest.mark.parametrize("lam", [1.0, 0.9, 0.0])
def test_on_policy_vtrace_with_lambda_equals_gae(lam):
    """With pi == mu, V-trace(lambda) targets minus V are canter's GAE(lambda) advantages."""
    rng = np.random.default_rng(2)
    T, N, gamma = 32, 5, 0.99
    rewards = rng.normal(size=(T, N)).astype(np.float32)
    values = rng.normal(size=(T, N)).astype(np.float32)
    boot = rng.normal(size=N).astype(np.float32)
    terminated = (rng.random((T, N)) < 0.05).astype(np.float32)
    dones = np.maximum(terminated, (rng.random((T, N)) < 0.05).astype(np.float32))
    adv = compute_gae(rewards, values, boot, terminated, dones, gamma, lam)
    out = vtrace(torch.zeros(T, N), *map(torch.from_numpy, (rewards, values, boot, terminated, dones)), gamma, lam)
    np.testing.assert_allclose((out.vs - torch.from_numpy(values)).numpy(), adv, rtol=1e-4, atol=1e-4)


def test_impala_passes_each_of_its_three_clips_to_vtrace():
    """With rho-bar, c-bar and the policy-gradient clip all different (their defaults are all 1), IMPALA's
    targets equal V-trace's with each clip in its place."""
    cfg = build(IMPALA.Config, dict(net_arch=[8], rho_clip=1.7, c_clip=0.6, pg_rho_clip=1.2, vtrace_lambda=0.9,
                                    gamma=0.95))
    algo = IMPALA(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2), cfg, seed=0)
    g = torch.Generator().manual_seed(0)
    T, N = 6, 3
    behaviour = torch.randn(T, N, generator=g) - 1.0
    logp = torch.randn(T, N, generator=g) - 1.0
    rewards, values, bootstrap = torch.randn(T, N, generator=g), torch.randn(T, N, generator=g), torch.randn(N, generator=g)
    dones = (torch.rand(T, N, generator=g) < 0.2).float()
    terminated = dones * (torch.rand(T, N, generator=g) < 0.5).float()
    batch = SimpleNamespace(behaviour_log_probs=behaviour, rewards=rewards, terminated=terminated, dones=dones)
    got = algo.targets(batch, logp, values, bootstrap)
    want = vtrace(logp - behaviour, rewards, values, bootstrap, terminated, dones, 0.95, 0.9, 1.7, 0.6, 1.2)
    assert ((logp - behaviour).exp() > 1.7).any() and ((logp - behaviour).exp() < 0.6).any()  # every clip bites
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
