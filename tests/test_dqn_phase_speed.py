"""DQN's training-phase shortcuts compute exactly what the per-step paths do: the MLP passes bound
once per phase (canter.models.mlp_passes) and the target values of repeated draws computed once."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from canter.algorithms.dqn import DQN, DQNConfig
from canter.data.batch import ReplayBatch, distinct_draws
from canter.models.q_network import QNetwork
from canter.models.mlp_passes import mlp_passes, q_network_passes
from canter.optim import FlatAdam

SPACES = (gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3))


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("width,rows", [(16, 10), (256, 64)])  # NumPy's products only; torch's for the middle layer
@pytest.mark.parametrize("blas_limited", [False, True])  # OpenBLAS at canter's thread count: its routes for matmul_np
def test_bound_passes_give_the_mlp_methods_bits(activation, width, rows, blas_limited, monkeypatch):
    from canter.models import linear

    monkeypatch.setattr(linear, "_blas_limited", blas_limited)
    torch.manual_seed(0)
    net = QNetwork(*SPACES, net_arch=[width, width], activation=activation)
    if activation == "relu":  # most units of the second layer off: the sparse backward runs
        with torch.no_grad():
            net.q._linears[1].bias[: int(0.75 * width)] = -100.0
    FlatAdam(net.parameters())  # gradients as views of one buffer, as in DQN
    obs = torch.randn(3 * rows, 4)
    d_out = np.random.default_rng(0).standard_normal((rows, 3)).astype(np.float32)
    passes, x = q_network_passes(net, obs, rows)
    for k in range(3):
        with torch.no_grad():
            q_ref, cache_ref = net.forward_cached(obs[k * rows:(k + 1) * rows])
            net.backward_cached(cache_ref, d_out)
            grads_ref = [p.grad.clone() for p in net.parameters()]
            for p in net.parameters():
                p.grad.fill_(7.0)  # overwritten, not accumulated
            q, cache = passes.forward(x[k * rows:(k + 1) * rows])
            passes.backward(d_out)
        np.testing.assert_array_equal(q, q_ref)
        for a, b in zip(cache, cache_ref):
            np.testing.assert_array_equal(a, b)
        for p, g in zip(net.parameters(), grads_ref):
            assert torch.equal(p.grad, g)
    assert mlp_passes(net.q, rows) is passes  # nothing moved: the same bound passes
    assert mlp_passes(net.q, rows + 1) is not passes


def test_bound_passes_are_rebuilt_when_storage_moves():
    torch.manual_seed(0)
    net = QNetwork(*SPACES, net_arch=[8, 8])
    passes = mlp_passes(net.q, 5)
    FlatAdam(net.parameters())  # parameters and gradients move into flat buffers
    fresh = mlp_passes(net.q, 5)
    assert fresh is not passes
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    with torch.no_grad():
        expected = net.q(torch.from_numpy(x)).numpy()
        net.q[0].weight.data = net.q[0].weight.data * 2.0  # new storage for one parameter
    again = mlp_passes(net.q, 5)
    assert again is not fresh
    with torch.no_grad():
        np.testing.assert_allclose(again.forward(x)[0], net.q(torch.from_numpy(x)).numpy(), rtol=1e-6, atol=1e-6)
    assert not np.allclose(again.forward(x)[0], expected)


def test_distinct_draws():
    idx = np.array([5, 2, 5, 9, 2, 2, 0])
    first, inverse = distinct_draws(idx)
    assert sorted(idx[first]) == [0, 2, 5, 9]
    np.testing.assert_array_equal(idx[first][inverse], idx)
    assert distinct_draws(np.arange(100)) is None  # nothing repeated: not worth the gathers
    assert distinct_draws(np.array([], dtype=np.int64)) is None


def _phase_batch(n: int, seed: int, relabelled: bool = False) -> ReplayBatch:
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(n // 2, (n,), generator=g)  # drawn with replacement: repeats
    table = torch.randn(n // 2, 4, generator=g)  # one next observation per buffer index
    next_obs = table[idx] + (torch.randn(n, 4, generator=g) if relabelled else 0.0)
    return ReplayBatch(obs=torch.randn(n, 4, generator=g), actions=torch.randint(3, (n,), generator=g),
                       rewards=torch.randn(n, generator=g), next_obs=next_obs,
                       terminated=(torch.rand(n, generator=g) < 0.2).float(), discounts=torch.full((n,), 0.99),
                       weights=torch.ones(n), indices=idx)


@pytest.mark.parametrize("relabelled", [False, True])
@pytest.mark.parametrize("n_quantiles", [0, 4])
def test_phase_target_values_of_repeated_draws(relabelled, n_quantiles, monkeypatch):
    """Each distinct draw's target values computed once are the values of every row; a buffer whose
    draws of one index differ (relabelled goals) gets every row computed."""
    algo = DQN(*SPACES, DQNConfig(net_arch=[16, 16], n_quantiles=n_quantiles), seed=0)
    batch = _phase_batch(64, seed=1, relabelled=relabelled)
    rows = []
    target_values = algo.target_values
    monkeypatch.setattr(algo, "target_values", lambda x: rows.append(len(x)) or target_values(x))
    got = algo._phase_target_values(batch)
    torch.testing.assert_close(got, target_values(batch.next_obs), rtol=1e-6, atol=1e-6)
    distinct = len(np.unique(batch.indices.numpy()))
    assert rows == [64 if relabelled else distinct] and distinct < 48


def test_learn_phase_with_repeated_draws_equals_one_minibatch_at_a_time():
    big = _phase_batch(4 * 16, seed=2)
    a, b = (DQN(*SPACES, DQNConfig(net_arch=[16, 16], lr=1e-2, max_grad_norm=0.5), seed=0) for _ in range(2))
    b.q.load_state_dict(a.q.state_dict())
    b.q_target.load_state_dict(a.q_target.state_dict())
    stats_phase = a.learn_phase(big, 4)
    stats_one = [b.learn(ReplayBatch(*(t[i * 16:(i + 1) * 16] for t in big))) for i in range(4)]
    for x, y in zip(a.q.parameters(), b.q.parameters()):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)
    for x, y in zip(stats_phase, stats_one):
        assert x == pytest.approx(y, rel=1e-5, abs=1e-6)
