"""Behaviour cloning: supervised learning of the dataset's actions (offline family).

Discrete actions: a categorical policy trained with cross-entropy; ``predict`` takes the most
likely action. Box actions: a deterministic ``tanh`` policy in ``[-1, 1]`` (the Agent rescales to
the bounds) trained with squared error. It learns whatever policy collected the data, so it is
the baseline offline RL methods (CQL, TD3+BC) are compared with: strong on expert data, weak on
noisy or mixed data.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from canter.algorithms.base import ActOutput, Algorithm, clip_grad_norm_, encoder_hp, encoder_kwargs, make_adam
from canter.algorithms.offpolicy import ACTIVATION_CHOICES
from canter.config import MAX_GRADIENT_STEPS, hp
from canter.data.batch import ReplayBatch
from canter.models.mlp import MLP
from canter.registry import register


@register("model", "mlp_bc")
class BCPolicy(nn.Module):
    """Policy network for behaviour cloning: logits ``[B, n]`` for Discrete actions, ``tanh`` of
    the MLP (``[B, dim]`` in ``[-1, 1]``) for Box actions."""

    def __init__(
        self, observation_space: gym.Space, action_space: gym.Space, net_arch: list[int] = (256, 256),
        activation: str = "relu", encoder: str = "auto",
    ) -> None:
        super().__init__()
        from canter.models.cnn import make_encoder

        self.encoder = make_encoder(observation_space, encoder)
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        n_out = int(action_space.n) if self.discrete else int(np.prod(action_space.shape))
        self.net = MLP([self.encoder.out_dim] + list(net_arch) + [n_out], activation)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:  # noqa: D102
        out = self.net(self.encoder(obs))
        return out if self.discrete else torch.tanh(out)


@dataclass
class BCConfig:
    """Behaviour-cloning hyperparameters."""

    lr: float = hp(1e-3, "Adam learning rate", low=0, low_open=True, search={"low": 1e-5, "high": 1e-2, "log": True})
    batch_size: int = hp(256, "minibatch size", low=1, search={"choices": [64, 128, 256, 512]})
    gradient_steps: int = hp(500, "gradient steps per trainer iteration (one log record each)", low=1,
                             high=MAX_GRADIENT_STEPS)
    net_arch: list[int] = hp([256, 256], "hidden layer sizes", low=1)
    activation: str = hp("relu", "hidden activation", choices=ACTIVATION_CHOICES)
    max_grad_norm: float = hp(10.0, "global gradient-norm clip", low=0, low_open=True)
    normalize_obs: bool = hp(False, "normalise observations with the dataset's mean and std")
    encoder: str = encoder_hp()


@register("algorithm", "bc")
class BC(Algorithm):
    """Behaviour cloning from a dataset (cross-entropy for Discrete, squared error for Box actions)."""

    name = "bc"
    family = "offline"
    Config = BCConfig
    default_model = "mlp_bc"
    squashed_actions = True  # Box policies output [-1, 1]; the Agent rescales

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: BCConfig, **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        c = config
        self.policy = self.make_model(net_arch=c.net_arch, activation=c.activation, **encoder_kwargs(c))
        self.params = list(self.policy.parameters())
        self.optimizer = make_adam(self.params, c.lr)
        self.discrete = isinstance(action_space, gym.spaces.Discrete)

    def act(self, obs: torch.Tensor, deterministic: bool = False) -> ActOutput:
        """The most likely action (Discrete; sampled from the softmax when not deterministic) or the
        policy's action (Box)."""
        out = self.policy(obs)
        if not self.discrete:
            return ActOutput(out)
        if deterministic:
            return ActOutput(out.argmax(-1))
        probs = torch.softmax(out, -1).cpu()  # the algorithm's generator is a CPU one
        return ActOutput(torch.multinomial(probs, 1, generator=self.generator).squeeze(-1).to(out.device))

    def learn(self, batch: ReplayBatch) -> dict[str, float]:
        """One gradient step on the cloning loss of ``batch.obs`` -> ``batch.actions``."""
        out = self.policy(batch.obs)
        if self.discrete:
            actions = batch.actions.long().view(-1)
            loss = F.cross_entropy(out, actions)
            extra = (out.detach().argmax(-1) == actions).float().mean()
        else:
            loss = F.mse_loss(out, batch.actions)
            extra = (out.detach() - batch.actions).abs().mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip_grad_norm_(self.optimizer, self.params, self.config.max_grad_norm)
        self.optimizer.step()
        self.updates += 1
        loss_value, extra_value = torch.stack([loss.detach(), extra]).tolist()
        return {"loss": loss_value, ("accuracy" if self.discrete else "abs_error"): extra_value}

    def modules(self) -> dict[str, nn.Module]:  # noqa: D102
        return {"policy": self.policy}

    def optimizers(self) -> dict[str, Any]:  # noqa: D102
        return {"policy": self.optimizer}
