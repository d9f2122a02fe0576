"""canter.models.linear: float32 products routed to oneDNN compute what torch computes."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from canter.envs.make import NATIVE_MIN_ENVS, make_vec_env
from canter.models import linear as L
from canter.utils import available_cpus, keep_freed_memory


def close(a: torch.Tensor, ref: torch.Tensor, tol: float = 1e-5) -> bool:
    """Float32 agreement: error at most ``tol`` of the largest magnitude (sums of many products)."""
    a, ref = a.detach().double(), ref.detach().double()
    return bool((a - ref).abs().max() <= tol * max(1.0, float(ref.abs().max())))


@pytest.fixture(params=["routed", "torch"])
def route(request, monkeypatch):
    """Run each test once with oneDNN routing as this machine has it and once with it off."""
    L.onednn_available.cache_clear()
    if request.param == "torch":
        monkeypatch.setenv("CANTER_ONEDNN", "0")
    yield request.param
    L.onednn_available.cache_clear()


def test_switch_off_by_environment(monkeypatch):
    L.onednn_available.cache_clear()
    monkeypatch.setenv("CANTER_ONEDNN", "0")
    assert not L.onednn_available()
    L.onednn_available.cache_clear()


@pytest.mark.parametrize("m,k,n", [(64, 256, 256), (8192, 4, 256), (3, 5, 7), (256, 64, 256)])
def test_linear_and_mm_into_match_torch(route, m, k, n):
    g = torch.Generator().manual_seed(m + k + n)
    x, w, b = torch.randn(m, k, generator=g), torch.randn(n, k, generator=g), torch.randn(n, generator=g)
    ref = x.double() @ w.double().t() + b.double()
    assert close(L.linear(x, w, b), ref)
    # transposed views as operands (the backward products use them)
    d = torch.randn(m, n, generator=g)
    assert close(L.linear(d, w.t()), d.double() @ w.double())
    out = torch.empty(n, k)
    L.mm_into(out, d.t(), x)
    assert close(out, d.double().t() @ x.double())


def test_linear_module_forward_and_gradients_match_nn_linear(route):
    torch.manual_seed(0)
    ref = nn.Linear(256, 256)
    fast = L.Linear(256, 256)
    fast.load_state_dict(ref.state_dict())
    assert list(fast.state_dict()) == list(ref.state_dict())
    x = torch.randn(64, 256, requires_grad=True)
    x2 = x.detach().clone().requires_grad_(True)
    y_ref, y = ref(x), fast(x2)
    assert close(y, y_ref)
    g = torch.randn_like(y)
    y_ref.backward(g)
    y.backward(g)
    assert close(x2.grad, x.grad) and close(fast.weight.grad, ref.weight.grad) and close(fast.bias.grad, ref.bias.grad)
    with torch.no_grad():
        assert close(fast(x), ref(x))


def test_linear_module_supports_double_backward(route):
    """create_graph=True (TRPO's Hessian-vector products) differentiates through the backward."""
    torch.manual_seed(1)
    ref, fast = nn.Linear(256, 256), L.Linear(256, 256)
    fast.load_state_dict(ref.state_dict())
    x = torch.randn(64, 256)

    def hvp(layer: nn.Module) -> torch.Tensor:
        loss = torch.tanh(layer(x)).pow(2).sum()
        (gw,) = torch.autograd.grad(loss, layer.weight, create_graph=True)
        (h,) = torch.autograd.grad(gw.sum(), layer.weight)
        return h

    assert close(hvp(fast), hvp(ref))


def test_routing_follows_cpu_vendor_and_size():
    """Only large float32 products go to oneDNN, and only where the CPU is AMD's (MKL's AVX2 path)."""
    x = torch.zeros(64, 256)
    big = L._routed(x, 64, 256, 256)
    assert big == (L.onednn_available() and L.min_macs() <= 64 * 256 * 256)
    assert L._routed(x, 256, 3136, 512) == L.onednn_available()  # above both thresholds
    assert L._routed(x, 8, 3136, 512) == L.onednn_available()  # a wide operand: memory-bound, routed on both
    assert not L._routed(x, 1, 3136, 512)  # under 2^21 multiply-accumulates
    assert not L._routed(x, 64, 4, 2)
    assert not L._routed(x.double(), 64, 256, 256)
    if L._cpu_vendor() != "AuthenticAMD":
        assert not L.onednn_available()


def test_routing_threshold_is_lower_from_zen5_on():
    """Zen 5 (family 26) routes DQN's 64x256x256 products; Zen 4 (25) and unknown CPUs keep them on MKL."""
    assert L.routing_threshold("26") == L.MIN_MACS <= 64 * 256 * 256
    for family in ("25", "23", None, "not a number"):
        assert 64 * 256 * 256 < L.routing_threshold(family) == L.MIN_MACS_BEFORE_ZEN5 <= 256 * 3136 * 512


def test_keep_freed_memory_reports_glibc():
    import platform

    ok = keep_freed_memory()
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert ok is True
    assert keep_freed_memory() is ok  # once per process


def test_auto_vectorisation_uses_native_only_from_enough_envs():
    few = make_vec_env("CartPole-v1", 1)
    many = make_vec_env("CartPole-v1", NATIVE_MIN_ENVS)
    forced = make_vec_env("CartPole-v1", 1, "native")
    try:
        assert type(few.env).__name__ == "SyncVectorEnv"
        assert type(many.env).__name__ == "CartPoleVectorEnv"
        assert type(forced.env).__name__ == "CartPoleVectorEnv"
        obs = few.reset(seed=3)
        assert obs.shape == (1, 4) and np.isfinite(obs).all()
    finally:
        for env in (few, many, forced):
            env.close()


@pytest.mark.parametrize("m,k,n", [(64, 256, 256), (64, 4, 256), (1, 256, 2), (256, 64, 4)])
def test_numpy_products_match_torch(route, m, k, n):
    """affine_np / matmul_np: NumPy below NUMPY_MAX_MACS, torch's kernels above; same values."""
    rng = np.random.default_rng(m * k * n)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (n, k), (n,)))
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + b
    assert close(torch.from_numpy(L.affine_np(x, w, b)), torch.from_numpy(ref))
    assert close(torch.from_numpy(L.affine_np(x, w)), torch.from_numpy(ref - b))
    for bias, want in ((b, ref), (None, ref - b)):  # into a given array (MLP.forward_cached's reuse)
        given = np.full((m, n), np.nan, dtype=np.float32)
        assert L.affine_np(x, w, bias, out=given) is given and close(torch.from_numpy(given), torch.from_numpy(want))
    d = rng.standard_normal((m, n)).astype(np.float32)
    assert close(torch.from_numpy(L.matmul_np(d, w)), torch.from_numpy(d.astype(np.float64) @ w))
    out = np.full((n, k), np.nan, dtype=np.float32)
    assert L.matmul_np(d.T, x, out=out) is out  # transposed operand, written in place
    assert close(torch.from_numpy(out), torch.from_numpy(d.T.astype(np.float64) @ x))


@pytest.fixture
def blas_threads_restored():
    """Leave OpenBLAS at one thread and torch at one thread (the suite's setting) after the test."""
    yield
    L.set_blas_threads(1)
    torch.set_num_threads(1)


def test_blas_threads_route_every_numpy_product_to_numpy(blas_threads_restored, monkeypatch):
    """With OpenBLAS given threads, affine_np / matmul_np never call torch's kernels (whose second
    thread would spin against OpenBLAS's); with one thread granted, large ``x @ w.T`` products go to
    torch again (OpenBLAS is slower in that layout) and ``a @ b`` ones stay on NumPy; with OpenBLAS at
    its own pool size (canter never limited it), large products of both go to torch (OpenBLAS would
    start its own threads for them)."""
    calls = []
    real_linear = L.linear
    monkeypatch.setattr(L, "linear", lambda *a, **k: calls.append("linear") or real_linear(*a, **k))
    real_mm_into = L.mm_into
    monkeypatch.setattr(L, "mm_into", lambda *a, **k: calls.append("mm_into") or real_mm_into(*a, **k))
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((64, 256), (256, 256), (256,)))
    assert 64 * 256 * 256 >= L.NUMPY_MAX_MACS
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + b
    out = np.empty((256, 256), np.float32)

    assert L.set_blas_threads(2) == min(2, available_cpus())
    if available_cpus() >= 2:
        assert L.blas_pool_threads() == 2
        assert close(torch.from_numpy(L.affine_np(x, w, b)), torch.from_numpy(ref))
        L.matmul_np(x.T, x, out=out)
        assert calls == []
    assert L.set_blas_threads(1) == 1
    assert L.blas_pool_threads() == 1
    assert close(torch.from_numpy(L.affine_np(x, w, b)), torch.from_numpy(ref))
    L.matmul_np(x.T, x, out=out)
    assert calls == ["linear"]
    assert close(torch.from_numpy(out), torch.from_numpy(x.T.astype(np.float64) @ x))
    monkeypatch.setattr(L, "_blas_limited", False)  # as before canter's first set_blas_threads
    L.matmul_np(x.T, x, out=out)
    assert calls == ["linear", "mm_into"]
    assert close(torch.from_numpy(out), torch.from_numpy(x.T.astype(np.float64) @ x))


@pytest.mark.parametrize("algo,hparams,torch_threads,blas_threads", [
    ("dqn", {"net_arch": [256, 256]}, 1, 2),  # hand-derived update through NumPy: OpenBLAS gets the threads
    ("dqn", {"net_arch": [256, 256], "manual_backward": False}, 2, 1),  # autograd: torch gets them
    ("ppo", {}, 2, 1),
])
def test_trainer_gives_threads_to_the_pool_that_multiplies(blas_threads_restored, algo, hparams, torch_threads,
                                                            blas_threads):
    import canter

    if available_cpus() < 2:
        pytest.skip("needs 2 CPUs")
    L.set_blas_threads(2)  # left over from an earlier run: a torch-side run must take it back to 1
    seen = []
    trainer = canter.make_trainer(algo, "CartPole-v1", seed=0, max_steps=300, eval_every=0, eval_episodes=1, n_envs=2,
                                  torch_threads=2, hparams={"learning_starts": 100, **hparams} if algo == "dqn"
                                  else {"n_steps": 64, "batch_size": 64, "n_epochs": 1})
    for _ in trainer():
        seen.append((torch.get_num_threads(), L.blas_threads(), L.blas_pool_threads()))
    assert seen and set(seen) == {(torch_threads, blas_threads, blas_threads)}


def test_one_thread_runs_leave_openblas_alone(blas_threads_restored, monkeypatch):
    """A run at one thread with NumPy routing already at one thread does not call threadpoolctl
    (its library scan costs ~10 ms of start-up)."""
    import threadpoolctl

    from canter.algorithms.base import use_threads

    L.set_blas_threads(1)
    monkeypatch.setattr(threadpoolctl, "threadpool_limits", lambda *a, **k: pytest.fail("threadpoolctl called"))
    use_threads(1, numpy_products=True)
    use_threads(2, numpy_products=False)
    assert torch.get_num_threads() == 2 and L.blas_threads() == 1


def test_explorers_keep_openblas_out_of_the_learner():
    """With explorers beside the learner, OpenBLAS's spinning threads would take their cores."""
    import dataclasses

    import canter

    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, max_steps=300,
                                  hparams={"net_arch": [256, 256], "learning_starts": 100})
    assert trainer.blas_takes_threads()
    trainer.run = dataclasses.replace(trainer.run, explorers=2)
    assert not trainer.blas_takes_threads()
    trainer.env.close()


def test_default_threads_are_two_only_for_wide_networks_with_cpus_to_spare():
    """Two threads for 256-unit layers by default on the 2-CPU host: 3,000 DQN CartPole steps took
    7.8-33.8 s instead of 4.4-4.9 at one thread whenever another job held the second core."""
    import canter
    from canter.algorithms.base import threads_for

    assert [threads_for(w, cpus=c) for w, c in ((64, 8), (256, 2), (256, 3), (256, 4), (129, 16))] == [1, 1, 1, 2, 2]
    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, max_steps=300, eval_every=0, learning_starts=100)
    assert trainer.agent.torch_threads == threads_for(256) == (2 if available_cpus() >= 4 else 1)
    trainer.close()


def test_a_one_thread_run_multiplying_through_numpy_limits_openblas_to_one_thread(blas_threads_restored, monkeypatch):
    """DQN's hand-derived update at one thread: OpenBLAS is limited to that thread (it would start its own
    for products of 2^18 multiply-accumulates and more), so matmul_np may give it those products."""
    from canter.algorithms.base import use_threads

    monkeypatch.setattr(L, "_blas_limited", False)  # OpenBLAS at its own pool size, as in a fresh process
    use_threads(1, numpy_products=True)
    assert L.blas_limited() and L.blas_threads() == 1 and L.blas_pool_threads() == 1
    assert L._matmul_on_numpy(64 * 256 * 256) and not L._on_numpy(64 * 256 * 256)
