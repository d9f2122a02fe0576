"""Deep Deterministic Policy Gradient (Lillicrap et al. 2016), as in Stable-Baselines3: TD3's
update with one critic, no target policy smoothing and an actor update on every step.

Everything else (Gaussian or Ornstein-Uhlenbeck exploration noise, Polyak targets, the loss
``mean(w * (Q(s, a) - y)^2)``) is :class:`~canter.algorithms.td3.TD3`'s code.
"""
from __future__ import annotations

from dataclasses import dataclass

from canter.algorithms.td3 import TD3, TD3Config
from canter.config import MAX_CRITICS, hp
from canter.registry import register


@dataclass
class DDPGConfig(TD3Config):
    """DDPG hyperparameters: TD3's, with DDPG's single critic and undelayed, unsmoothed updates."""

    policy_delay: int = hp(1, "critic updates per actor and target update", low=1)
    target_policy_noise: float = hp(0.0, "std of the smoothing noise on target actions (0: none)", low=0)
    n_critics: int = hp(1, "Q networks; targets use their minimum", low=1, high=MAX_CRITICS)


@register("algorithm", "ddpg")
class DDPG(TD3):
    """DDPG: deterministic actor and one critic, with exploration noise and Polyak targets."""

    name = "ddpg"
    Config = DDPGConfig
