"""Twin Delayed DDPG (Fujimoto et al. 2018), following Stable-Baselines3's ``TD3.train``.

Per gradient step the critics regress on
``y = r + discount * (1 - terminated) * min_i Q'_i(s', clip(mu'(s') + clip(N(0, sigma'), -c, c), -1, 1))``
(target policy smoothing, twin critics); every ``policy_delay`` steps the actor maximises
``Q_1(s, mu(s))`` through a frozen critic and the actor and critic targets move by Polyak
averaging. Exploration adds Gaussian or Ornstein-Uhlenbeck noise to ``mu(s)`` in the
``[-1, 1]`` action scale (the Agent rescales to the env's bounds).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from torch import nn

from canter.algorithms.base import (
    ActOutput, Algorithm, critic_arch_hp, critic_arch_kwargs, encoder_hp, encoder_kwargs, make_adam,
)
from canter.algorithms.offpolicy import OffPolicyConfig, SoftUpdate, frozen, mean_over_critics
from canter.config import MAX_CRITICS, hp
from canter.data.batch import ReplayBatch
from canter.models import distributions as D
from canter.registry import register

OU_THETA, OU_DT = 0.15, 1e-2  # Stable-Baselines3's OrnsteinUhlenbeckActionNoise defaults


@dataclass
class TD3Config(OffPolicyConfig):
    """TD3 hyperparameters (Stable-Baselines3's defaults, Gaussian exploration noise added)."""

    lr: float = hp(1e-3, "Adam learning rate (actor and critics)", low=0, low_open=True,
                   search={"low": 1e-5, "high": 3e-3, "log": True})
    net_arch: list[int] = hp([400, 300], "hidden layer sizes (actor and critics)", low=1)
    policy_delay: int = hp(2, "critic updates per actor and target update", low=1)
    target_policy_noise: float = hp(0.2, "std of the smoothing noise on target actions (0: none)", low=0)
    target_noise_clip: float = hp(0.5, "clip of the target smoothing noise", low=0)
    action_noise: str = hp("normal", "exploration noise: normal, ou (Ornstein-Uhlenbeck) or none",
                           choices=("normal", "ou", "none"))
    noise_std: float = hp(0.1, "exploration noise std (action scale [-1, 1])", low=0)
    n_critics: int = hp(2, "Q networks; targets use their minimum", low=1, high=MAX_CRITICS)
    critic_net_arch: list[int] | None = critic_arch_hp("qf")
    sb3_critic_key = "qf"  # the critics' key in Stable-Baselines3's net_arch mapping, dict(pi=[...], qf=[...])
    encoder: str = encoder_hp()


@register("algorithm", "td3")
class TD3(Algorithm):
    """TD3: deterministic actor, twin critics, target policy smoothing, delayed actor updates."""

    name = "td3"
    family = "off_policy"
    Config = TD3Config
    default_model = "mlp_td3"
    model_methods = ("actor", "critic")  # the deterministic actor and the Q networks (modules)
    default_n_envs = 1
    action_spaces = (gym.spaces.Box,)
    squashed_actions = True
    sparse_stats = ("actor_loss",)  # every policy_delay updates: the last one's between them (carry_stats)

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: TD3Config, **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        c = config
        self.model = self.make_model(net_arch=c.net_arch, activation=c.activation, n_critics=c.n_critics,
                                     **encoder_kwargs(c), **critic_arch_kwargs(c))
        self.actor, self.critic = self.model.actor, self.model.critic
        self.actor_target = copy.deepcopy(self.actor).requires_grad_(False)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.critic_params = list(self.critic.parameters())
        self.update_targets = [SoftUpdate(self.actor_target, self.actor), SoftUpdate(self.critic_target, self.critic)]
        self.actor_optimizer = make_adam(list(self.actor.parameters()), c.lr)
        self.critic_optimizer = make_adam(list(self.critic.parameters()), c.lr)
        self.ou_state: torch.Tensor | None = None
        self.last_priorities: torch.Tensor | None = None

    # -- acting -------------------------------------------------------------------------------
    def act(self, obs: torch.Tensor, deterministic: bool = False) -> ActOutput:
        """``mu(s)``, plus clipped exploration noise unless deterministic."""
        actions = self.actor(obs)
        c = self.config
        if deterministic or c.action_noise == "none" or c.noise_std == 0:
            return ActOutput(actions)
        randn = D.randn(actions.shape, self.generator, actions)
        if c.action_noise == "normal":
            noise = c.noise_std * randn
        else:
            if self.ou_state is None or self.ou_state.shape != actions.shape:
                self.ou_state = torch.zeros_like(actions)
            self.ou_state = self.ou_state - OU_THETA * self.ou_state * OU_DT + c.noise_std * math.sqrt(OU_DT) * randn
            noise = self.ou_state
        return ActOutput((actions + noise).clamp(-1.0, 1.0))

    @property
    def explores_deterministically(self) -> bool:
        """True with Ornstein-Uhlenbeck noise: :meth:`canter.agents.agent.Agent.explore` (stochastic evaluation,
        a frozen opponent) then acts with ``mu(s)``, as Stable-Baselines3's ``predict(deterministic=False)``
        does; a call on its own has no episode to carry the process over (each restarted from the training
        envs' frozen state: ``mu(s)`` plus a constant offset)."""
        return self.config.action_noise == "ou"

    def reset_noise(self, done: torch.Tensor) -> None:
        """Restart the Ornstein-Uhlenbeck process of the envs whose episode ended."""
        if self.ou_state is not None and self.ou_state.shape[0] == done.shape[0]:
            self.ou_state = torch.where(done.view(-1, 1).to(self.ou_state.device), torch.zeros_like(self.ou_state),
                                        self.ou_state)

    # -- learning -----------------------------------------------------------------------------
    def critic_loss(self, batch: ReplayBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """``sum_i mean(w * (Q_i(s, a) - y)^2)`` and the TD errors ``[n_critics, B]``."""
        c = self.config
        with torch.no_grad():
            next_actions = self.actor_target(batch.next_obs)
            if c.target_policy_noise > 0:
                noise = D.randn(next_actions.shape, self.generator, next_actions)
                noise = (noise * c.target_policy_noise).clamp(-c.target_noise_clip, c.target_noise_clip)
                next_actions = (next_actions + noise).clamp(-1.0, 1.0)
            next_q = self.critic_target(batch.next_obs, next_actions).min(0).values
            target = batch.rewards + batch.discounts * (1.0 - batch.terminated) * next_q
        td = self.critic(batch.obs, batch.actions) - target
        return (batch.weights * td.pow(2)).mean(1).sum(), td

    def actor_loss(self, obs: torch.Tensor) -> torch.Tensor:
        """``-mean Q_1(s, mu(s))``; the critic gets no gradient."""
        actions = self.actor(obs)
        with frozen(self.critic_params):
            return -self.critic.first(obs, actions).mean()

    def policy_loss(self, batch: ReplayBatch) -> torch.Tensor:
        """The actor's loss on ``batch``: :meth:`actor_loss` of its observations (TD3+BC adds a term)."""
        return self.actor_loss(batch.obs)

    def learn(self, batch: ReplayBatch) -> dict[str, float]:
        """One critic step; every ``policy_delay`` steps also an actor step and target updates."""
        c = self.config
        self.updates += 1
        critic_loss, td = self.critic_loss(batch)
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_optimizer.step()
        stats = {"critic_loss": critic_loss.item()}
        if self.updates % c.policy_delay == 0:
            actor_loss = self.policy_loss(batch)
            self.actor_optimizer.zero_grad(set_to_none=True)
            actor_loss.backward()
            self.actor_optimizer.step()
            for update in self.update_targets:
                update(c.tau)
            stats["actor_loss"] = actor_loss.item()
        self.last_priorities = mean_over_critics(td)
        return stats

    # -- state --------------------------------------------------------------------------------
    def modules(self) -> dict[str, nn.Module]:  # noqa: D102
        return {"model": self.model, "actor_target": self.actor_target, "critic_target": self.critic_target}

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:  # noqa: D102
        return {"actor": self.actor_optimizer, "critic": self.critic_optimizer}

    def extra_state(self) -> dict[str, Any]:  # noqa: D102
        return {} if self.ou_state is None else {"ou_state": self.ou_state.clone()}

    def load_extra_state(self, state: dict[str, Any]) -> None:  # noqa: D102
        ou = state.get("ou_state")
        self.ou_state = None if ou is None else torch.as_tensor(ou, device=self.device).clone()
