"""canter.models.activations: both tanh kernels compute tanh, the route follows the CPU and the
array size, and the hand-derived passes stay equal to autograd on either route."""
from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from canter.models import activations
from canter.models.activations import SIGMOID_MIN_SIZE, sigmoid_route_wanted, sigmoid_tanh_, tanh_


@pytest.fixture(params=["numpy", "sigmoid"])
def tanh_route(request, monkeypatch):
    """Force one kernel for every array size."""
    monkeypatch.setattr(activations, "_sigmoid_from", 0 if request.param == "sigmoid" else sys.maxsize)
    return request.param


@pytest.mark.parametrize("size", [7, SIGMOID_MIN_SIZE - 1, SIGMOID_MIN_SIZE, 3 * SIGMOID_MIN_SIZE])
def test_both_kernels_compute_tanh(tanh_route, size):
    x = (np.random.default_rng(size).standard_normal(size) * 3).astype(np.float32)
    x[:6] = [0.0, -0.0, 1e-6, -1e-6, 40.0, -40.0]
    a = x.copy()
    assert tanh_(a) is a
    np.testing.assert_allclose(a, np.tanh(x.astype(np.float64)), rtol=0, atol=3e-7)
    assert a[4] == 1.0 and a[5] == -1.0 and np.abs(a).max() <= 1.0


def test_the_sigmoid_kernel_keeps_nan_and_saturates_at_inf():
    a = np.array([np.nan, np.inf, -np.inf, 0.5], np.float32)
    sigmoid_tanh_(a)
    assert np.isnan(a[0]) and a[1] == 1.0 and a[2] == -1.0
    assert abs(a[3] - np.tanh(0.5)) < 3e-7


def test_the_route_follows_the_cpu():
    avx2 = "fpu sse2 avx avx2 fma"
    assert sigmoid_route_wanted("x86_64", "AuthenticAMD", avx2)  # Zen 3: NumPy's tanh is slow there
    assert not sigmoid_route_wanted("x86_64", "AuthenticAMD", avx2 + " avx512f avx512bw")  # Zen 4, Zen 5
    assert not sigmoid_route_wanted("x86_64", "GenuineIntel", avx2)  # not measured: NumPy's kernel stays
    assert not sigmoid_route_wanted("aarch64", None, None)
    assert not sigmoid_route_wanted("x86_64", "AuthenticAMD", None)  # flags unknown


def test_small_arrays_keep_numpy_where_the_sigmoid_route_is_on(monkeypatch):
    calls = []
    monkeypatch.setattr(activations, "_sigmoid_from", SIGMOID_MIN_SIZE)
    monkeypatch.setattr(activations, "sigmoid_tanh_", lambda a: calls.append(a.size) or a)
    tanh_(np.zeros(SIGMOID_MIN_SIZE - 1, np.float32))
    tanh_(np.zeros(SIGMOID_MIN_SIZE, np.float32))
    assert calls == [SIGMOID_MIN_SIZE]


def test_manual_ppo_gradients_match_autograd_on_either_tanh_kernel(tanh_route):
    from canter.algorithms.ppo import PPO, PPOConfig
    from tests.test_fast_paths import DISCRETE, _batch

    algo = PPO(*DISCRETE, PPOConfig(net_arch=[64, 64], ent_coef=0.01), seed=5)
    mb = algo._normalized(_batch(algo, 256, seed=6))  # 2 x 256 x 64 activations per hidden layer
    algo._grads_autograd(mb)  # torch.tanh
    g_auto = algo.optimizer.grad.clone()
    algo.optimizer.zero_grad()
    with torch.no_grad():
        algo._grads_manual(mb)
    torch.testing.assert_close(algo.optimizer.grad, g_auto, rtol=1e-4, atol=1e-6)
