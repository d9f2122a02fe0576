"""canter's quantile Huber loss against sb3-contrib's ``quantile_huber_loss`` (kappa 1), in the three
shapes canter uses it: QR-DQN's, IQN's sampled fractions and TQC's pooled target."""
from __future__ import annotations

import pytest

utils = pytest.importorskip("sb3_contrib.common.utils")

import torch  # noqa: E402

from canter.models.distributional import quantile_huber_loss  # noqa: E402


def _rand(g: torch.Generator, *shape: int) -> torch.Tensor:
    return 2 * torch.randn(*shape, generator=g, dtype=torch.float64)


def _same_value_and_gradient(current: torch.Tensor, ours, theirs, rtol: float) -> None:  # noqa: ANN001
    current.requires_grad_(True)
    a, b = ours(current), theirs(current)
    torch.testing.assert_close(a, b, rtol=rtol, atol=0.0)
    torch.testing.assert_close(torch.autograd.grad(a, current)[0], torch.autograd.grad(b, current)[0],
                               rtol=rtol, atol=1e-8)


def test_qrdqn_shape_summed_over_quantiles():
    """``[B, N]`` against ``[B, N]``: summed over the predicted quantiles, averaged over the target ones
    and the batch. sb3-contrib's midpoints are float32, hence rtol 1e-6."""
    g = torch.Generator().manual_seed(0)
    target = _rand(g, 16, 25)
    _same_value_and_gradient(_rand(g, 16, 25), lambda c: quantile_huber_loss(c, target).mean(),
                             lambda c: utils.quantile_huber_loss(c, target), 1e-6)


def test_iqn_sampled_fractions_with_more_target_samples():
    """IQN: the fractions of the online quantiles are sampled per row (sb3-contrib's ``cum_prob``), N != N'."""
    g = torch.Generator().manual_seed(1)
    taus = torch.rand(16, 8, generator=g, dtype=torch.float64)
    target = _rand(g, 16, 12)
    _same_value_and_gradient(_rand(g, 16, 8), lambda c: quantile_huber_loss(c, target, taus=taus).mean(),
                             lambda c: utils.quantile_huber_loss(c, target, cum_prob=taus.unsqueeze(-1)), 1e-12)


def test_tqc_shape_against_the_pooled_target():
    """TQC: ``[B, E, N]`` against the pooled ``[B, 1, M]``, averaged over everything
    (``sum_over_quantiles=False``); canter's TQC takes the mean over networks and divides by N."""
    g = torch.Generator().manual_seed(2)
    target = _rand(g, 16, 1, 115)
    _same_value_and_gradient(
        _rand(g, 16, 5, 25),
        lambda c: quantile_huber_loss(c.transpose(0, 1), target.transpose(0, 1)).mean(0).mean() / 25,
        lambda c: utils.quantile_huber_loss(c, target, sum_over_quantiles=False), 1e-6)
