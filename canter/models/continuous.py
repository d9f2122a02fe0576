"""Actor and critic networks for the off-policy actor-critic family (DDPG, TD3, SAC).

Actors output actions in ``[-1, 1]`` (tanh); the Agent rescales them to the action bounds.
Critics are ``n_critics`` Q networks evaluated together (:class:`QEnsemble`). The actor and the
critic each have their own observation encoder (:func:`canter.models.cnn.make_encoder`: flat for
vectors, a CNN for images), shared by the critic's Q networks; as in Stable-Baselines3's
``share_features_extractor=False``, each is trained by its own network's loss.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from canter.errors import CanterError
from canter.models.linear import Linear
from canter.models.cnn import make_encoder
from canter.models.mlp import ACTIVATIONS, MLP
from canter.registry import register


class QEnsemble(nn.ModuleList):
    """``E`` MLPs of the same shape on the same input; :meth:`forward` -> ``[E, B, out]``.

    Separate ``nn.Linear`` stacks measured as fast as one batched-matmul ensemble here (one
    torch thread, 256-unit layers), and keep PyTorch's default initialisation per member.
    """

    def __init__(self, members: int, sizes: list[int], activation: str = "relu") -> None:
        super().__init__(MLP(sizes, activation) for _ in range(members))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return torch.stack([q(x) for q in self])


def _box_dim(action_space: gym.Space, who: str) -> int:
    if not isinstance(action_space, gym.spaces.Box):
        raise CanterError(f"{who} needs a Box action space, got {type(action_space).__name__}")
    return int(np.prod(action_space.shape))


def _critic_arch(net_arch: list[int], critic_net_arch: list[int] | None) -> list[int]:
    """The critics' hidden widths: ``critic_net_arch``, or the actor's ``net_arch`` where it is None."""
    return list(net_arch if critic_net_arch is None else critic_net_arch)


class ContinuousCritic(nn.Module):
    """``n_critics`` Q(s, a) networks on ``concat(obs, action)``; :meth:`forward` -> ``[E, B]``, or
    ``[E, B, n_quantiles]`` return quantiles per network with ``n_quantiles`` (TQC)."""

    def __init__(
        self, observation_space: gym.Space, action_dim: int, net_arch: list[int], activation: str, n_critics: int,
        n_quantiles: int = 0, encoder: str = "auto",
    ) -> None:
        super().__init__()
        self.encoder = make_encoder(observation_space, encoder)
        self.n_quantiles = n_quantiles
        out = [n_quantiles or 1]
        self.q = QEnsemble(n_critics, [self.encoder.out_dim + action_dim] + list(net_arch) + out, activation)

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:  # noqa: D102
        q = self.q(torch.cat([self.encoder(obs), actions], dim=-1))
        return q if self.n_quantiles else q.squeeze(-1)

    def first(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Q of the first critic only, ``[B]``."""
        return self.q[0](torch.cat([self.encoder(obs), actions], dim=-1)).squeeze(-1)


class DeterministicActor(nn.Module):
    """``tanh(MLP(obs))``: a deterministic action in ``[-1, 1]``."""

    def __init__(self, observation_space: gym.Space, action_dim: int, net_arch: list[int], activation: str,
                 encoder: str = "auto") -> None:
        super().__init__()
        self.encoder = make_encoder(observation_space, encoder)
        self.net = MLP([self.encoder.out_dim] + list(net_arch) + [action_dim], activation)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return torch.tanh(self.net(self.encoder(obs)))


class SquashedGaussianActor(nn.Module):
    """Gaussian policy squashed by tanh: :meth:`forward` -> ``(mean, log_std, latent)``.

    Without gSDE, ``log_std`` is a state-dependent head clamped to ``[-20, 2]``. With gSDE
    (generalised state-dependent exploration, Raffin et al. 2021), ``log_std`` is a free
    ``[latent, action]`` parameter and the noise is ``latent @ W`` with ``W ~ N(0, std^2)``
    resampled only now and then; the mean is clipped to ``[-2, 2]`` as in Stable-Baselines3.
    """

    LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0

    def __init__(
        self, observation_space: gym.Space, action_dim: int, net_arch: list[int], activation: str,
        use_sde: bool = False, log_std_init: float = -3.0, encoder: str = "auto",
    ) -> None:
        super().__init__()
        self.encoder = make_encoder(observation_space, encoder)
        arch = list(net_arch)
        self.trunk = MLP([self.encoder.out_dim] + arch, activation)
        self.trunk.append(ACTIVATIONS[activation]())
        self.use_sde = use_sde
        # mean and log-std heads in one layer (same initialisation as two nn.Linear of fan-in arch[-1])
        self.head = Linear(arch[-1], action_dim if use_sde else 2 * action_dim)
        if use_sde:
            self.sde_log_std = nn.Parameter(torch.full((arch[-1], action_dim), float(log_std_init)))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # noqa: D102
        latent = self.trunk(self.encoder(obs))
        out = self.head(latent)
        if self.use_sde:
            return out.clamp(-2.0, 2.0), self.sde_log_std, latent
        mean, log_std = out.chunk(2, dim=-1)
        return mean, log_std.clamp(self.LOG_STD_MIN, self.LOG_STD_MAX), latent


@register("model", "mlp_td3")
class DeterministicActorCritic(nn.Module):
    """Deterministic actor and ``n_critics`` Q networks (DDPG, TD3)."""

    def __init__(
        self, observation_space: gym.Space, action_space: gym.Space, net_arch: list[int] = (400, 300),
        activation: str = "relu", n_critics: int = 2, encoder: str = "auto", critic_net_arch: list[int] | None = None,
    ) -> None:
        super().__init__()
        dim = _box_dim(action_space, "DeterministicActorCritic")
        self.actor = DeterministicActor(observation_space, dim, list(net_arch), activation, encoder)
        self.critic = ContinuousCritic(observation_space, dim, _critic_arch(net_arch, critic_net_arch), activation,
                                       n_critics, encoder=encoder)

    def action(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic action in ``[-1, 1]``."""
        return self.actor(obs)

    def value(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Q values of every critic, ``[n_critics, B]``."""
        return self.critic(obs, actions)


@register("model", "mlp_sac")
class SquashedGaussianActorCritic(nn.Module):
    """Squashed Gaussian actor (optionally gSDE) and ``n_critics`` Q networks (SAC), or quantile
    networks of ``n_quantiles`` outputs each (TQC)."""

    def __init__(
        self, observation_space: gym.Space, action_space: gym.Space, net_arch: list[int] = (256, 256),
        activation: str = "relu", n_critics: int = 2, use_sde: bool = False, log_std_init: float = -3.0,
        n_quantiles: int = 0, encoder: str = "auto", critic_net_arch: list[int] | None = None,
    ) -> None:
        super().__init__()
        dim = _box_dim(action_space, "SquashedGaussianActorCritic")
        self.actor = SquashedGaussianActor(observation_space, dim, list(net_arch), activation, use_sde, log_std_init,
                                           encoder)
        self.critic = ContinuousCritic(observation_space, dim, _critic_arch(net_arch, critic_net_arch), activation,
                                       n_critics, n_quantiles, encoder)

    def action(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic action ``tanh(mean)``."""
        return torch.tanh(self.actor(obs)[0])

    def value(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Q values of every critic, ``[n_critics, B]`` (TQC: their quantiles' means)."""
        q = self.critic(obs, actions)
        return q.mean(-1) if self.critic.n_quantiles else q


@register("model", "mlp_sac_discrete")
class DiscreteActorCritic(nn.Module):
    """Categorical actor (logits) and ``n_critics`` Q networks over all actions (discrete SAC).

    A parameter-free encoder (vectors) is shared; a convolutional one (images) is built twice,
    ``encoder`` for the actor and ``critic_encoder`` for the Q networks, each trained by its own
    network's loss (the paper's Atari agent has separate actor and critic networks)."""

    def __init__(
        self, observation_space: gym.Space, action_space: gym.Space, net_arch: list[int] = (256, 256),
        activation: str = "relu", n_critics: int = 2, encoder: str = "auto", critic_net_arch: list[int] | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(action_space, gym.spaces.Discrete):
            raise CanterError(f"DiscreteActorCritic needs a Discrete action space, got {type(action_space).__name__}")
        from canter.models.cnn import has_parameters

        self.encoder = make_encoder(observation_space, encoder)
        #: the Q networks' own encoder (None: they share the parameter-free ``encoder``)
        self.critic_encoder = make_encoder(observation_space, encoder) if has_parameters(self.encoder) else None
        n_in, n_act, arch = self.encoder.out_dim, int(action_space.n), list(net_arch)
        self.actor = MLP([n_in] + arch + [n_act], activation)
        self.q = QEnsemble(n_critics, [n_in] + _critic_arch(arch, critic_net_arch) + [n_act], activation)

    def action(self, obs: torch.Tensor) -> torch.Tensor:
        """Action logits, ``[B, n_actions]``."""
        return self.actor(self.encoder(obs))

    def critic_features(self, obs: torch.Tensor) -> torch.Tensor:
        """What the Q networks take: the critic encoder's features of ``obs``."""
        return (self.critic_encoder or self.encoder)(obs)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """Q values of every critic for every action, ``[n_critics, B, n_actions]``."""
        return self.q(self.critic_features(obs))
