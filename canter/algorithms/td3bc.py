"""TD3+BC (Fujimoto & Gu 2021): TD3 on a dataset with a behaviour-cloning term, offline family.

The critics learn exactly as in :class:`~canter.algorithms.td3.TD3`. The actor minimises
``-lambda * mean Q_1(s, mu(s)) + mean (mu(s) - a)^2`` with ``lambda = alpha / mean |Q_1(s, mu(s))|``
(held constant in the gradient), so the policy improves on the data's actions while staying near
them. Observations are normalised by default as in the paper: ``(s - mean) / (std + 1e-3)`` with the
mean and std of the dataset's states, unclipped (:attr:`~canter.algorithms.base.Algorithm.obs_std_eps`).
Actions are in the ``[-1, 1]`` scale (the Agent rescales to the env's bounds); every count
(``policy_delay``, the offline trainer's steps) is in gradient updates.
"""
from __future__ import annotations

from dataclasses import dataclass
import torch
from torch.nn import functional as F

from canter.algorithms.base import check_net_archs, critic_arch_hp, encoder_hp
from canter.algorithms.offpolicy import ACTIVATION_CHOICES, frozen
from canter.algorithms.td3 import TD3
from canter.config import MAX_CRITICS, MAX_GRADIENT_STEPS, hp
from canter.data.batch import ReplayBatch
from canter.registry import register


@dataclass
class TD3BCConfig:
    """TD3+BC hyperparameters (the paper's)."""

    lr: float = hp(3e-4, "Adam learning rate (actor and critics)", low=0, low_open=True,
                   search={"low": 1e-5, "high": 3e-3, "log": True})
    batch_size: int = hp(256, "minibatch size", low=1, search={"choices": [64, 128, 256, 512]})
    gradient_steps: int = hp(1_000, "gradient steps per trainer iteration (one log record each)", low=1,
                             high=MAX_GRADIENT_STEPS)
    gamma: float = hp(0.99, "discount factor", low=0, high=1)
    tau: float = hp(0.005, "target-network Polyak rate", low=0, high=1, low_open=True)
    alpha: float = hp(2.5, "weight of the Q term against behaviour cloning (0: pure BC)", low=0,
                      search={"choices": [1.0, 2.5, 5.0, 10.0]})
    net_arch: list[int] = hp([256, 256], "hidden layer sizes (actor and critics)", low=1)
    activation: str = hp("relu", "hidden activation", choices=ACTIVATION_CHOICES)
    policy_delay: int = hp(2, "critic updates per actor and target update", low=1)
    target_policy_noise: float = hp(0.2, "std of the smoothing noise on target actions (0: none)", low=0)
    target_noise_clip: float = hp(0.5, "clip of the target smoothing noise", low=0)
    n_critics: int = hp(2, "Q networks; targets use their minimum", low=1, high=MAX_CRITICS)
    critic_net_arch: list[int] | None = critic_arch_hp("qf")
    sb3_critic_key = "qf"  # the critics' key in Stable-Baselines3's net_arch mapping, dict(pi=[...], qf=[...])
    normalize_obs: bool = hp(True, "normalise observations with the dataset's mean and std (+ 1e-3, unclipped)")
    encoder: str = encoder_hp()
    # TD3's exploration settings (properties, not hyperparameters): an offline policy never explores
    action_noise = property(lambda self: "none")
    noise_std = property(lambda self: 0.0)

    def validate(self) -> None:
        """Cross-field checks."""
        check_net_archs(self)


@register("algorithm", "td3bc")
class TD3BC(TD3):
    """TD3+BC on a dataset (Box actions): TD3's critics, an actor regularised towards the data's actions."""

    name = "td3bc"
    family = "offline"
    Config = TD3BCConfig
    obs_std_eps = 1e-3  # the paper's normalize_states: std + 1e-3, no clipping

    def policy_loss(self, batch: ReplayBatch) -> torch.Tensor:
        """``-lambda * mean Q_1(s, mu(s)) + mean (mu(s) - a)^2``, ``lambda = alpha / mean |Q_1|``."""
        actions = self.actor(batch.obs)
        with frozen(self.critic_params):
            q = self.critic.first(batch.obs, actions)
        lam = self.config.alpha / q.detach().abs().mean().clamp_min(1e-6)
        return -lam * q.mean() + F.mse_loss(actions, batch.actions)
