"""V-trace off-policy targets (Espeholt et al. 2018, "IMPALA", section 4.1), time-major.

For a trajectory produced by a behaviour policy mu and evaluated under a target policy pi,
with ``rho_t = min(rho_clip, pi/mu)`` and ``c_t = lambda * min(c_clip, pi/mu)``::

    v_s = V(x_s) + sum_{t>=s} gamma^{t-s} (c_s ... c_{t-1}) delta_t
    delta_t = rho_t (r_t + gamma V(x_{t+1}) - V(x_t))

computed backwards as ``v_s - V(x_s) = delta_s + gamma c_s (v_{s+1} - V(x_{s+1}))``. The policy
gradient uses ``A_s = min(pg_rho_clip, pi/mu) (r_s + gamma v_{s+1} - V(x_s))``.

Episode boundaries follow canter's NEXT_STEP convention (``docs/architecture.md`` section 3):
row ``t+1`` after an episode's last step holds that episode's final observation, so
``values[t+1]`` is V(final obs). A *terminated* step does not bootstrap, a *truncated* one
bootstraps from V(final obs), and ``dones`` cuts the recursion, exactly as in
:func:`canter.data.compute_gae`. The autoreset rows (``valid`` False) get targets too; callers
mask them out of the loss. On-policy (``pi == mu``) with ``lambda = 1`` the targets are the
n-step returns bootstrapped from the last value; with ``lambda < 1`` they equal GAE(lambda)
returns.
"""
from __future__ import annotations

from typing import NamedTuple

import torch


class VTraceReturns(NamedTuple):
    """V-trace value targets ``vs`` and policy-gradient advantages, both ``[T, N]``."""

    vs: torch.Tensor
    pg_advantages: torch.Tensor


@torch.no_grad()
def vtrace(
    log_rhos: torch.Tensor, rewards: torch.Tensor, values: torch.Tensor, bootstrap_values: torch.Tensor,
    terminated: torch.Tensor, dones: torch.Tensor, gamma: float, lam: float = 1.0,
    rho_clip: float | None = 1.0, c_clip: float | None = 1.0, pg_rho_clip: float | None = 1.0,
) -> VTraceReturns:
    """V-trace targets for ``[T, N]`` tensors.

    ``log_rhos`` is ``log pi(a_t|x_t) - log mu(a_t|x_t)``; ``values[t]`` is V(x_t) under the
    current critic and ``bootstrap_values`` ([N]) is V of the observation after the last row.
    ``terminated`` and ``dones`` (terminated or truncated) are 0/1 floats. A clip of ``None``
    means no clipping.
    """
    rhos = log_rhos.exp()
    clipped_rhos = rhos if rho_clip is None else rhos.clamp(max=rho_clip)
    cs = lam * (rhos if c_clip is None else rhos.clamp(max=c_clip))
    next_values = torch.cat([values[1:], bootstrap_values[None]], dim=0)
    not_terminated = 1.0 - terminated
    deltas = clipped_rhos * (rewards + gamma * not_terminated * next_values - values)
    carry = gamma * cs * (1.0 - dones)
    diff = torch.empty_like(values)
    acc = torch.zeros_like(bootstrap_values)
    for t in range(values.shape[0] - 1, -1, -1):
        acc = deltas[t] + carry[t] * acc
        diff[t] = acc
    vs = values + diff
    # v_{s+1} for the policy gradient: the next row's target inside an episode; at an episode's
    # end the next row is a reset, so use V(final obs) (only a truncation keeps it, via not_terminated)
    next_vs = torch.cat([vs[1:], bootstrap_values[None]], dim=0)
    next_vs = torch.where(dones.bool(), next_values, next_vs)
    pg_rhos = rhos if pg_rho_clip is None else rhos.clamp(max=pg_rho_clip)
    pg_advantages = pg_rhos * (rewards + gamma * not_terminated * next_vs - values)
    return VTraceReturns(vs, pg_advantages)
