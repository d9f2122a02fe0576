"""Distributional Q networks: QR-DQN's quantile head (Dabney et al. 2018), dueling optional."""
from __future__ import annotations

import gymnasium as gym
import torch
from torch import nn

from canter.envs.masks import apply_mask, mask_width, split_mask
from canter.errors import CanterError
from canter.models.linear import Linear
from canter.models.mlp import ACTIVATIONS, MLP
from canter.registry import register


@register("model", "mlp_qr")
class QuantileQNetwork(nn.Module):
    """``n_quantiles`` return quantiles per action; ``value`` is their mean (the Q value).

    With ``dueling`` the quantiles are ``V(s) + A(s, a) - mean_a A(s, a)``, per quantile. With an
    action mask in the observations (:mod:`canter.envs.masks`), ``value`` is masked and
    ``quantiles`` is not (the loss reads only the taken actions' quantiles).
    """

    #: handles observations with an action mask (:mod:`canter.envs.masks`)
    action_masks = True

    def __init__(
        self, observation_space: gym.Space, action_space: gym.Space, net_arch: list[int] = (64, 64),
        activation: str = "relu", dueling: bool = False, n_quantiles: int = 50, encoder: str = "auto",
    ) -> None:
        super().__init__()
        if not isinstance(action_space, gym.spaces.Discrete):
            raise CanterError(f"QuantileQNetwork needs a Discrete action space, got {type(action_space).__name__}")
        from canter.models.cnn import make_encoder

        arch = list(net_arch)
        self.encoder = make_encoder(observation_space, encoder)
        self.mask_width = mask_width(observation_space)
        self.n_actions, self.n_quantiles, self.dueling = int(action_space.n), n_quantiles, dueling
        self.trunk = MLP([self.encoder.out_dim] + arch, activation)
        self.trunk.append(ACTIVATIONS[activation]())
        self.head = Linear(arch[-1], self.n_actions * n_quantiles)
        self.v_head = Linear(arch[-1], n_quantiles) if dueling else None

    def quantiles(self, obs: torch.Tensor) -> torch.Tensor:
        """Return quantiles, shape ``[B, n_actions, n_quantiles]``."""
        if self.mask_width:
            obs = obs[:, :-self.mask_width]
        h = self.trunk(self.encoder(obs))
        q = self.head(h).view(-1, self.n_actions, self.n_quantiles)
        if self.v_head is None:
            return q
        return self.v_head(h).unsqueeze(1) + q - q.mean(1, keepdim=True)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """Q values (mean over quantiles), shape ``[B, n_actions]``."""
        q = self.quantiles(obs).mean(-1)
        return apply_mask(q, split_mask(obs, self.mask_width)[1]) if self.mask_width else q


def quantile_huber_loss(current: torch.Tensor, target: torch.Tensor, kappa: float = 1.0) -> torch.Tensor:
    """Quantile regression Huber loss per sample, ``[B]``.

    ``current`` ``[B, N]`` are the predicted quantiles at midpoints ``tau_i = (i + 0.5) / N``,
    ``target`` ``[B, M]`` samples of the target distribution. Summed over the predicted
    quantiles and averaged over the target ones (as in QR-DQN and SB3-contrib).
    """
    n = current.shape[1]
    delta = target.unsqueeze(1) - current.unsqueeze(2)  # [B, N, M]
    abs_delta = delta.abs()
    huber = torch.where(abs_delta <= kappa, 0.5 * delta.pow(2), kappa * (abs_delta - 0.5 * kappa))
    tau = (torch.arange(n, dtype=current.dtype, device=current.device) + 0.5).div_(n).view(1, n, 1)
    return ((tau - (delta.detach() < 0).to(current.dtype)).abs() * huber / kappa).sum(1).mean(1)
