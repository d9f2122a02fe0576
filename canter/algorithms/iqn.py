"""Implicit Quantile Networks (Dabney et al. 2018b, "Implicit Quantile Networks for Distributional
Reinforcement Learning"): DQN whose network maps a state and a quantile fraction ``tau`` to the
return quantile at ``tau`` (:class:`~canter.models.distributional.ImplicitQuantileNetwork`).

Each update draws ``N`` fractions per sample for the online quantiles and ``N'`` for the target
network's (both ``n_quantiles``, uniform from the algorithm's generator). The greedy next action
maximises the mean of the target quantiles (the online network's Q values with ``double_q``), and
the loss is the quantile Huber loss (kappa 1) at the sampled fractions, summed over ``N`` and
averaged over ``N'`` (as QR-DQN's). Acting and evaluation use the mean over ``n_act_quantiles``
midpoint fractions, a deterministic estimate of Q. The rest (replay, epsilon, target syncs,
n-step, prioritized replay, dueling) is :class:`~canter.algorithms.dqn.DQN`'s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from canter.algorithms.dqn import DQN, DQNConfig
from canter.config import hp
from canter.data.batch import ReplayBatch
from canter.models.distributional import quantile_huber_loss
from canter.registry import register


@dataclass
class IQNConfig(DQNConfig):
    """IQN: DQN's fields (Stable-Baselines3's defaults) and the paper's fraction counts."""

    n_quantiles: int = hp(64, "IQN: fractions drawn per sample for the online quantiles (N) and the target's (N')",
                          low=1)
    n_cosines: int = hp(64, "IQN: cosine features of each fraction's embedding", low=1)
    n_act_quantiles: int = hp(32, "IQN: midpoint fractions whose mean quantile is the Q value for acting (K)", low=1)


@register("algorithm", "iqn")
class IQN(DQN):
    """IQN: DQN learning the return's quantile function at sampled fractions."""

    name = "iqn"
    Config = IQNConfig
    default_model = "mlp_iqn"
    builtin_models = ()

    def make_model(self, **kwargs: Any) -> nn.Module:
        """DQN's model arguments and the fraction embedding's sizes."""
        c = self.config
        return super().make_model(n_cosines=c.n_cosines, n_act_quantiles=c.n_act_quantiles, **kwargs)

    def _fractions(self, rows: int) -> torch.Tensor:
        """``[rows, n_quantiles]`` fractions, uniform in [0, 1), from the algorithm's generator."""
        return torch.rand(rows, self.config.n_quantiles, generator=self.generator).to(self.device)

    def target_values(self, next_obs: torch.Tensor) -> torch.Tensor:
        """The target network's quantiles at fresh fractions, ``[B, A, N']``."""
        with torch.no_grad():
            return self.q_target.quantiles(next_obs, self._fractions(len(next_obs)))

    def td_loss(self, batch: ReplayBatch, next_target: torch.Tensor | None = None,
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-sample quantile Huber loss at sampled fractions ``[B]``, its priorities and the chosen
        actions' mean quantiles ``[B]``."""
        target = self.td_target(batch, next_target)  # [B, N']
        taus = self._fractions(len(batch.obs))
        current = self.q.quantiles(batch.obs, taus)  # [B, A, N]
        index = batch.actions.long().view(-1, 1, 1).expand(-1, 1, current.shape[2])
        current = current.gather(1, index).squeeze(1)
        per_sample = quantile_huber_loss(current, target, taus=taus)
        return per_sample, per_sample.detach(), current.detach().mean(1)
