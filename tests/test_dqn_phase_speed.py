"""DQN's training-phase shortcuts compute exactly what the per-step paths do: the MLP passes bound
once per phase (canter.models.mlp_passes)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from canter.models.mlp import QNetwork
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
