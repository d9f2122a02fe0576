"""REINFORCE with a learned baseline (Williams 1992; Sutton & Barto, section 13.4).

The policy gradient is ``-mean(log pi(a_t|s_t) * (G_t - V(s_t)))`` with ``G_t`` the discounted
return from ``t``; the baseline ``V`` is regressed on ``G_t``. Returns come from the shared
on-policy trainer as GAE with lambda fixed to 1, which *is* the Monte-Carlo return: for an
episode that ends inside the rollout, ``A_t + V(s_t) = sum_k gamma^k r_{t+k}`` exactly.

Vector envs and truncation: an episode is cut where the rollout ends (each env runs its own
episodes, so episodes end at different times) or where a time limit truncates it. A cut
episode's return is completed with the baseline's estimate of the rest, ``gamma^k V(s_cut)``,
never with zero: treating a cut as the end of the episode would bias every return before it.
With ``n_steps`` at least the episode limit (the presets), no episode spans more than two rollouts
and every episode that terminates inside a rollout gets its exact Monte-Carlo return; the cut ones
are each env's episode running at the rollout's end and any truncated inside it (a rollout can hold
both). The ``gamma^t`` factor of the textbook update is dropped, as in every practical implementation.
"""
from __future__ import annotations

from dataclasses import dataclass

from canter.algorithms.a2c import A2C, A2CConfig
from canter.config import hp
from canter.registry import register


@dataclass
class REINFORCEConfig(A2CConfig):
    """REINFORCE hyperparameters (``gae_lambda`` is fixed at 1: Monte-Carlo returns)."""

    lr: float = hp(1e-3, "learning rate", low=0, low_open=True, search={"low": 1e-5, "high": 1e-2, "log": True})
    optimizer: str = hp("adam", "optimizer: adam or rmsprop", choices=("adam", "rmsprop"))
    n_steps: int = hp(512, "steps per env per rollout (at least the episode limit keeps returns Monte-Carlo)",
                      low=1, search={"choices": [256, 512, 1000, 2000]})
    normalize_advantage: bool = hp(True, "normalise G_t - V(s_t) over the rollout")
    max_grad_norm: float = hp(1.0, "global gradient-norm clip", low=0, low_open=True)
    gae_lambda: float = hp(1.0, "fixed at 1 for REINFORCE (Monte-Carlo returns); a2c and ppo take other values",
                           low=1, high=1)


@register("algorithm", "reinforce")
class REINFORCE(A2C):
    """REINFORCE: Monte-Carlo policy gradient with a learned value baseline."""

    name = "reinforce"
    Config = REINFORCEConfig
    default_n_envs = 4
