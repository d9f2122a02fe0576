"""Distributional Q networks: QR-DQN's quantile head (Dabney et al. 2018), C51's categorical head
(Bellemare et al. 2017) and IQN's implicit quantile network (Dabney et al. 2018b), dueling
optional; the quantile Huber loss."""
from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import torch
from torch import nn

from canter.envs.masks import apply_mask, apply_mask_below, mask_width, masked_value_below, split_mask
from canter.errors import CanterError
from canter.models.linear import Linear
from canter.models.mlp import ACTIVATIONS, MLP
from canter.models.q_network import dueling_streams
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
        noisy: bool = False,
    ) -> None:
        super().__init__()
        if not isinstance(action_space, gym.spaces.Discrete):
            raise CanterError(f"QuantileQNetwork needs a Discrete action space, got {type(action_space).__name__}")
        from canter.models.cnn import make_encoder
        from canter.models.noisy import NoisyLinear

        arch = list(net_arch)
        self.encoder = make_encoder(observation_space, encoder)
        self.mask_width = mask_width(observation_space)
        self.n_actions, self.n_quantiles, self.dueling = int(action_space.n), n_quantiles, dueling
        layer = NoisyLinear if noisy else Linear  # NoisyNet: every layer after the encoder
        widths = [self.encoder.out_dim] + arch
        self.v_head: nn.Module | None = None
        if dueling:  # separate value and advantage streams from the last hidden layer on
            self.trunk, self.head, self.v_head = dueling_streams(
                widths, self.n_actions * n_quantiles, n_quantiles, activation, layer)
        else:
            self.trunk = MLP(widths, activation, layer=layer)
            self.trunk.append(ACTIVATIONS[activation]())
            self.head = layer(arch[-1], self.n_actions * n_quantiles)

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
        return apply_mask_below(q, split_mask(obs, self.mask_width)[1]) if self.mask_width else q


@register("model", "mlp_c51")
class CategoricalQNetwork(QuantileQNetwork):
    """C51 (Bellemare et al. 2017): a categorical return distribution per action over ``n_atoms``
    fixed atoms from ``v_min`` to ``v_max``. :meth:`logits` ``[B, n_actions, n_atoms]`` (with
    ``dueling``, ``V + A - mean_a A`` per atom on the logits, as Rainbow); :meth:`value` is the
    distribution's mean (masked under an action mask; ``logits`` are not)."""

    def __init__(
        self, observation_space: gym.Space, action_space: gym.Space, net_arch: list[int] = (64, 64),
        activation: str = "relu", dueling: bool = False, encoder: str = "auto", noisy: bool = False,
        n_atoms: int = 51, v_min: float = -10.0, v_max: float = 10.0,
    ) -> None:
        super().__init__(observation_space, action_space, net_arch, activation, dueling, n_atoms, encoder, noisy)
        self.register_buffer("support", torch.linspace(v_min, v_max, n_atoms), persistent=False)
        support = torch.linspace(v_min, v_max, n_atoms, device="cpu")  # checked on the CPU: also where the model
        # is built on torch's meta device to count its size (canter.model_size), whose tensors hold no values
        if not bool((support.diff() > 0).all()):
            # float32 cannot tell the atoms apart (e.g. 1e8 and 1e8 + 1): C51's projection divided by 0
            raise CanterError(f"'hparams.v_min' ({v_min}) and 'hparams.v_max' ({v_max}) are too close for {n_atoms} "
                              f"distinct float32 atoms at that magnitude; widen the support or lower 'hparams.n_atoms'")
        #: masked actions' Q value: below every mean of the support (MASKED is not, for v_min <= -1e8)
        self.masked_value = masked_value_below(float(support[0]))

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        """Unnormalised log-probabilities of the atoms, ``[B, n_actions, n_atoms]``."""
        return self.quantiles(obs)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """Q values: the mean of each action's distribution, ``[B, n_actions]``."""
        q = (torch.softmax(self.logits(obs), -1) * self.support).sum(-1)
        return apply_mask(q, split_mask(obs, self.mask_width)[1], self.masked_value) if self.mask_width else q


@register("model", "mlp_iqn")
class ImplicitQuantileNetwork(nn.Module):
    """IQN: return quantiles at any fractions ``tau``. The encoder and the first ``net_arch`` layer
    give features ``psi(s)`` (a convolutional encoder's features alone, as in the paper's Atari
    network, so that every ``net_arch`` layer comes after the merge); each fraction's cosine
    embedding ``phi(tau) = relu(W cos(pi i tau) + b)``, ``i = 0..n_cosines-1``, multiplies them, and
    the other layers map ``psi(s) * phi(tau)`` to one return quantile per action (``V + A - mean A``
    per fraction with ``dueling``).

    :meth:`value` (acting, Double DQN's choice) is the mean over ``n_act_quantiles`` midpoint
    fractions ``(k + 0.5) / K``: a deterministic estimate of the Q values (the paper averages K
    sampled fractions). With an action mask, ``value`` is masked and ``quantiles`` is not.
    """

    #: handles observations with an action mask (:mod:`canter.envs.masks`)
    action_masks = True

    def __init__(
        self, observation_space: gym.Space, action_space: gym.Space, net_arch: list[int] = (64, 64),
        activation: str = "relu", dueling: bool = False, n_quantiles: int = 64, encoder: str = "auto",
        n_cosines: int = 64, n_act_quantiles: int = 32, noisy: bool = False,
    ) -> None:
        super().__init__()
        if not isinstance(action_space, gym.spaces.Discrete):
            raise CanterError(f"ImplicitQuantileNetwork needs a Discrete action space, got {type(action_space).__name__}")
        from canter.models.cnn import has_parameters, make_encoder
        from canter.models.noisy import NoisyLinear

        self.encoder = make_encoder(observation_space, encoder)
        self.mask_width = mask_width(observation_space)
        self.n_actions, self.n_quantiles, self.dueling = int(action_space.n), n_quantiles, dueling
        layer = NoisyLinear if noisy else Linear  # NoisyNet: the layers of psi and after the embedding
        if has_parameters(self.encoder):  # a CNN: psi is its features, every net_arch layer after the merge
            self.psi: nn.Module = nn.Identity()
            widths = [self.encoder.out_dim] + list(net_arch)
        else:  # flat observations: psi ends with the first net_arch layer
            self.psi = MLP([self.encoder.out_dim, net_arch[0]], activation, layer=layer)
            self.psi.append(ACTIVATIONS[activation]())
            widths = list(net_arch)
        self.phi = nn.Sequential(Linear(n_cosines, widths[0]), nn.ReLU())
        self.register_buffer("cos_index", torch.arange(n_cosines, dtype=torch.float32) * math.pi, persistent=False)
        self.register_buffer("act_taus", (torch.arange(n_act_quantiles, dtype=torch.float32) + 0.5) / n_act_quantiles,
                             persistent=False)
        self.v_head: nn.Module | None = None
        if dueling:  # separate value and advantage streams from the last layer after the merge on
            self.trunk, self.head, self.v_head = dueling_streams(widths, self.n_actions, 1, activation, layer)
        else:
            self.trunk = MLP(widths, activation, layer=layer) if len(widths) > 1 else nn.Identity()
            if len(widths) > 1:
                self.trunk.append(ACTIVATIONS[activation]())
            self.head = layer(widths[-1], self.n_actions)

    def quantiles(self, obs: torch.Tensor, taus: torch.Tensor) -> torch.Tensor:
        """Return quantiles at ``taus`` (``[B, N]``, or ``[N]`` for every row): ``[B, n_actions, N]``."""
        if self.mask_width:
            obs = obs[:, :-self.mask_width]
        features = self.psi(self.encoder(obs))  # [B, d]
        if taus.dim() == 1:
            taus = taus.expand(len(features), -1)
        embedding = self.phi(torch.cos(taus.unsqueeze(-1) * self.cos_index))  # [B, N, d]
        h = self.trunk(features.unsqueeze(1) * embedding)
        out = self.head(h)  # [B, N, A]
        if self.v_head is not None:
            out = self.v_head(h) + out - out.mean(-1, keepdim=True)
        return out.transpose(1, 2)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """Q values: the mean return quantile over the midpoint fractions, ``[B, n_actions]``."""
        q = self.quantiles(obs, self.act_taus).mean(-1)
        return apply_mask_below(q, split_mask(obs, self.mask_width)[1]) if self.mask_width else q


class _QuantileHuber(torch.autograd.Function):
    """The quantile Huber loss with its gradient derived by hand (see :func:`quantile_huber_loss`)."""

    @staticmethod
    def forward(ctx: Any, current: torch.Tensor, target: torch.Tensor, kappa: float,  # noqa: D102
                taus: torch.Tensor | None) -> torch.Tensor:
        n, m = current.shape[-1], target.shape[-1]
        if taus is None:  # the midpoints (i + 0.5) / N
            tau = (torch.arange(n, dtype=current.dtype, device=current.device) + 0.5).div_(n).unsqueeze(-1)  # [N, 1]
        else:  # sampled fractions (IQN), [..., N]
            tau = taus.unsqueeze(-1)
        delta = target.unsqueeze(-2) - current.unsqueeze(-1)  # [..., N, M]
        clipped = torch.nn.functional.hardtanh(delta, -kappa, kappa)  # d huber / d delta
        # the weight |tau - 1{delta < 0}| is 0.5 + (tau - 0.5) sign(delta), and sign(delta) clipped = |clipped|,
        # so weight * clipped = 0.5 clipped + (tau - 0.5) |clipped| (no comparisons: torch's are slow here)
        weighted = clipped.abs().mul_(tau - 0.5).add_(clipped, alpha=0.5)
        scale = 1.0 / (kappa * m)
        ctx.save_for_backward(weighted.sum(-1).mul_(-scale))  # d loss / d current: delta falls as current rises
        ctx.current_shape = current.shape
        # weight * huber = (delta - clipped / 2) * weight * clipped: 0.5 delta^2 inside [-kappa, kappa],
        # kappa (|delta| - kappa / 2) outside, times the weight
        return delta.sub_(clipped, alpha=0.5).mul_(weighted).sum((-2, -1)).mul_(scale)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:  # noqa: D102
        (grad,) = ctx.saved_tensors
        return (grad * grad_output.unsqueeze(-1)).sum_to_size(ctx.current_shape), None, None, None


def quantile_huber_loss(current: torch.Tensor, target: torch.Tensor, kappa: float = 1.0,
                        taus: torch.Tensor | None = None) -> torch.Tensor:
    """Quantile regression Huber loss per sample: ``current`` ``[..., N]`` predicted quantiles at
    midpoints ``tau_i = (i + 0.5) / N`` (or at the fractions ``taus`` ``[..., N]``, IQN's sampled
    ones), ``target`` ``[..., M]`` samples of the target distribution
    (leading dimensions broadcast; the target is a constant: it gets no gradient). Summed over the
    predicted quantiles and averaged over the target ones (as in QR-DQN and sb3-contrib); ``[...]``.

    The gradient is derived by hand (``-|tau - 1{delta < 0}| * clip(delta, -kappa, kappa) / kappa``
    averaged over the targets), so autograd records one node instead of about a dozen elementwise
    ops over the ``[..., N, M]`` pairs, and the weight needs no comparison (torch's ``<`` and
    ``where`` ran at 1-2 ns per element here, its arithmetic at ~0.15). TQC's gradient step (256
    samples, 2 x 25 quantiles; median of 8 alternated blocks): 16.5 -> 7.9 ms with 64-unit
    networks, 28.2 -> 19.3 ms with 256-unit ones. Tested against the autograd form in
    ``tests/test_offpolicy_losses.py``.
    """
    if target.requires_grad:
        raise ValueError("quantile_huber_loss treats the target as a constant: pass target.detach()")
    return _QuantileHuber.apply(current, target, float(kappa), taus)
