"""Truncated Quantile Critics (Kuznetsov et al. 2020): SAC whose critics learn return distributions,
with the overestimation bias controlled by dropping the largest target quantiles.

Each of ``n_critics`` networks predicts ``n_quantiles`` quantiles of the return at the midpoints
``tau_i = (i + 0.5) / n_quantiles``. The target pools every target network's quantiles of
``Q'(s', a')`` for a fresh ``a' ~ pi(.|s')``, sorts them, keeps the smallest ``n_critics *
(n_quantiles - top_quantiles_to_drop_per_net)``, and subtracts ``alpha * log pi(a'|s')``:
``y_j = r + discount * (1 - terminated) * (z_j - alpha * log pi)``. Each network's quantiles regress
on all ``y_j`` with the quantile Huber loss (kappa 1), averaged over networks, predicted and target
quantiles and the batch (sb3-contrib's TQC takes the same mean). The actor maximises the mean of
every quantile of every network, minus the entropy term. The rest (entropy coefficient, update
order, Polyak targets, gSDE) is :class:`~canter.algorithms.sac.SAC`'s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from canter.algorithms.sac import SAC, SACConfig
from canter.config import MAX_CRITICS, hp
from canter.data.batch import ReplayBatch
from canter.errors import CanterError
from canter.models.distributional import quantile_huber_loss
from canter.registry import register


@dataclass
class TQCConfig(SACConfig):
    """TQC hyperparameters (sb3-contrib's defaults: 25 quantiles per network, 2 dropped per network)."""

    n_critics: int = hp(2, "quantile critic networks; the target pools their quantiles", low=1,
                        high=MAX_CRITICS)
    n_quantiles: int = hp(25, "return quantiles predicted by each critic network", low=1)
    top_quantiles_to_drop_per_net: int = hp(2, "largest target quantiles dropped per critic network (the "
                                               "truncation that counters overestimation)", low=0)

    def validate(self) -> None:
        """Cross-field checks."""
        super().validate()
        if self.top_quantiles_to_drop_per_net >= self.n_quantiles:
            raise CanterError(f"'hparams.top_quantiles_to_drop_per_net' ({self.top_quantiles_to_drop_per_net}) must be "
                              f"less than 'hparams.n_quantiles' ({self.n_quantiles}): no target quantile would be left")


@register("algorithm", "tqc")
class TQC(SAC):
    """Truncated Quantile Critics: SAC with distributional critics and truncated targets."""

    name = "tqc"
    Config = TQCConfig

    def make_model(self, **kwargs: Any) -> nn.Module:
        """SAC's model with quantile critics."""
        return super().make_model(n_quantiles=self.config.n_quantiles, **kwargs)

    def critic_loss(
        self, batch: ReplayBatch, alpha: torch.Tensor, sde_weights: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The quantile Huber loss of every network against the truncated target quantiles, and
        per-network TD errors of the quantiles' means ``[n_critics, B]`` (for prioritized replay)."""
        c = self.config
        with torch.no_grad():
            next_actions, next_log_prob = self.sample(batch.next_obs, sde_weights)
            pooled = self.critic_target(batch.next_obs, next_actions)  # [E, B, N]
            n_nets, size = pooled.shape[0], pooled.shape[1]
            pooled = pooled.transpose(0, 1).reshape(size, -1).sort(dim=1).values
            kept = pooled[:, : n_nets * (c.n_quantiles - c.top_quantiles_to_drop_per_net)]
            bootstrap = (batch.discounts * (1.0 - batch.terminated)).unsqueeze(1)
            target = batch.rewards.unsqueeze(1) + bootstrap * (kept - alpha * next_log_prob.unsqueeze(1))
        current = self.critic(batch.obs, batch.actions)  # [E, B, N]
        per_sample = quantile_huber_loss(current, target.unsqueeze(0)).mean(0) / c.n_quantiles  # every network at once
        td = current.mean(-1) - target.mean(-1)
        return (batch.weights * per_sample).mean(), td

    def policy_value(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The mean of every network's quantiles, ``[B]`` (no minimum: the truncated targets already
        counter overestimation)."""
        return self.critic(obs, actions).mean(dim=(0, 2))
