"""C51 (Bellemare et al. 2017, "A Distributional Perspective on Reinforcement Learning"): DQN
learning a categorical distribution of the return over ``n_atoms`` fixed atoms ``z_j`` from
``v_min`` to ``v_max`` (:class:`~canter.models.distributional.CategoricalQNetwork`).

The target is the target network's distribution at the greedy next action (the largest mean; the
online network's choice with ``double_q``), shifted by the reward and shrunk by the discount,
``r + discount * (1 - terminated) * z_j`` clipped to ``[v_min, v_max]``, and projected back onto
the atoms (each shifted atom's probability split between its two neighbours in proportion to
closeness, :func:`categorical_projection`). The loss is the cross-entropy of the online
distribution of the taken action against it, which is also the prioritized-replay priority (as
Dopamine's; Rainbow's KL divergence differs from it by the target's entropy). With ``noisy``, ``dueling``, ``n_step``, ``prioritized`` and ``double_q`` this is the
Rainbow agent of Hessel et al. 2018. The rest is :class:`~canter.algorithms.dqn.DQN`'s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from canter.algorithms.dqn import DQN, DQNConfig
from canter.config import hp
from canter.config_values import FLOAT32_MAX  # the atoms' support, their spacing and the shifted atoms are float32
from canter.data.batch import ReplayBatch
from canter.envs.masks import apply_mask, masked_value_below, split_mask
from canter.errors import CanterError
from canter.registry import register


def categorical_projection(probs: torch.Tensor, rewards: torch.Tensor, not_done: torch.Tensor,
                           support: torch.Tensor) -> torch.Tensor:
    """The distribution ``probs`` ``[B, N]`` over ``support`` ``[N]`` (evenly spaced atoms), moved to
    ``rewards + not_done * z`` (``[B]`` each), clipped to the support's range and projected back onto
    its atoms: ``[B, N]``, each row summing to its input row's sum."""
    n = support.shape[0]
    v_min, v_max = float(support[0]), float(support[-1])
    moved = (rewards.unsqueeze(1) + not_done.unsqueeze(1) * support).clamp_(v_min, v_max)
    b = ((moved - v_min) / ((v_max - v_min) / (n - 1))).clamp_(0, n - 1)
    lower, upper = b.floor(), b.ceil()
    # an atom that lands exactly on an atom (lower == upper) gives it all of its probability
    to_lower = probs * (upper - b + (lower == upper).to(probs.dtype))
    to_upper = probs * (b - lower)
    out = torch.zeros_like(probs)
    out.scatter_add_(1, lower.long(), to_lower)
    out.scatter_add_(1, upper.long(), to_upper)
    return out


@dataclass
class C51Config(DQNConfig):
    """C51: DQN's fields (Stable-Baselines3's defaults) and the paper's support (51 atoms on [-10, 10])."""

    n_atoms: int = hp(51, "C51: atoms of the categorical return distribution", low=2)
    v_min: float = hp(-10.0, "C51: the smallest atom (returns below it count as v_min)")
    v_max: float = hp(10.0, "C51: the largest atom (returns above it count as v_max)")
    n_quantiles: int = hp(0, "not used by c51, whose head is categorical (must be 0; qrdqn learns quantiles)",
                          low=0)

    def validate(self) -> None:
        """Cross-field checks."""
        super().validate()
        if self.v_max <= self.v_min:
            raise CanterError(f"'hparams.v_max' ({self.v_max}) must be greater than 'hparams.v_min' ({self.v_min})")
        if max(abs(self.v_min), abs(self.v_max), self.v_max - self.v_min) > FLOAT32_MAX:  # the support is float32
            raise CanterError(f"'hparams.v_min' ({self.v_min}) and 'hparams.v_max' ({self.v_max}) must lie within "
                              f"{FLOAT32_MAX:.4g} of 0 and of each other (the atoms are float32)")
        if self.n_quantiles:
            raise CanterError("c51 learns a categorical distribution: 'hparams.n_quantiles' must be 0 (use qrdqn "
                              "for quantiles)")
        if not self.huber:
            raise CanterError("c51 learns with a cross-entropy loss: 'hparams.huber' false (a squared TD error) does "
                              "not apply; leave huber true")


@register("algorithm", "c51")
class C51(DQN):
    """C51: DQN learning a categorical return distribution over fixed atoms.

    With noisy, dueling, n-step, prioritized and Double DQN it is the Rainbow agent of Hessel et al. 2018.
    """

    name = "c51"
    Config = C51Config
    default_model = "mlp_c51"
    builtin_models = ()
    model_methods = ("value", "logits")

    def make_model(self, **kwargs: Any) -> nn.Module:
        """DQN's model arguments and the support."""
        c = self.config
        return super().make_model(n_atoms=c.n_atoms, v_min=c.v_min, v_max=c.v_max, **kwargs)

    def target_values(self, next_obs: torch.Tensor) -> torch.Tensor:
        """The target network's atom probabilities, ``[B, A, n_atoms]``."""
        with torch.no_grad():
            return torch.softmax(self.q_target.logits(next_obs), -1)

    def td_target(self, batch: ReplayBatch, next_target: torch.Tensor | None = None) -> torch.Tensor:
        """The projected target distribution ``[B, n_atoms]`` (module docstring)."""
        with torch.no_grad():
            probs = self.target_values(batch.next_obs) if next_target is None else next_target
            means = (probs * self.q_target.support).sum(-1)
            if self.mask_width:  # the greedy next action must be allowed
                means = apply_mask(means, split_mask(batch.next_obs, self.mask_width)[1],
                                   masked_value_below(float(self.q_target.support[0])))
            best = self._next_action(batch, means)
            chosen = probs.gather(1, best.unsqueeze(-1).expand(-1, 1, probs.shape[2])).squeeze(1)
            return categorical_projection(chosen, batch.rewards, batch.discounts * (1.0 - batch.terminated),
                                          self.q_target.support)

    def td_loss(self, batch: ReplayBatch, next_target: torch.Tensor | None = None,
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-sample cross-entropy ``[B]`` against the projected target, the same as priorities, and
        the taken actions' Q values ``[B]``."""
        target = self.td_target(batch, next_target)
        logp = torch.log_softmax(self.q.logits(batch.obs), -1)
        index = batch.actions.long().view(-1, 1, 1).expand(-1, 1, logp.shape[2])
        logp = logp.gather(1, index).squeeze(1)  # [B, n_atoms]
        per_sample = -(target * logp).sum(-1)
        q = (logp.detach().exp() * self.q.support).sum(-1)
        return per_sample, per_sample.detach(), q
