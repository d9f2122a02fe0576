"""Soft Actor-Critic (Haarnoja et al. 2018) for Box actions, with automatic entropy tuning and
optional gSDE exploration; the update follows Stable-Baselines3's ``SAC.train`` step for step.

Per gradient step: the actor samples ``a~pi(.|s)`` once (reparameterised, tanh-squashed); the
entropy coefficient alpha takes its step; the twin critics regress on
``y = r + discount * (1 - terminated) * (min_i Q'_i(s', a') - alpha * log pi(a'|s'))``; the actor
minimises ``alpha * log pi(a|s) - min_i Q_i(s, a)`` through frozen critics; the target critics
move by Polyak averaging every ``target_update_interval`` steps.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from canter.algorithms.base import (
    ActOutput, Algorithm, critic_arch_hp, critic_arch_kwargs, encoder_hp, encoder_kwargs, make_adam,
)
from canter.algorithms.offpolicy import EntropyCoef, OffPolicyConfig, SoftUpdate, frozen, mean_over_critics, parse_ent_coef
from canter.config import MAX_CRITICS, hp
from canter.data.batch import ReplayBatch
from canter.errors import CanterError
from canter.models import distributions as D
from canter.models.distributions import gaussian_log_prob
from canter.registry import register

_LOG2 = math.log(2.0)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def tanh_log_det(u: torch.Tensor) -> torch.Tensor:
    """``sum log(1 - tanh(u)^2)`` over the last dim, computed stably as ``2 (log 2 - u - softplus(-2u))``."""
    return (2.0 * (_LOG2 - u - F.softplus(-2.0 * u))).sum(-1)


@dataclass
class SACConfig(OffPolicyConfig):
    """SAC hyperparameters (Stable-Baselines3's defaults)."""

    ent_coef: str = hp("auto", "entropy coefficient: 'auto' (learned, starts at 1, or at init_from's learned value), "
                              "'auto_<init>', or a fixed number")
    target_entropy: float | None = hp(None, "entropy target of the learned coefficient (null: -action_dim)")
    target_update_interval: int = hp(1, "gradient steps between target-network updates", low=1)
    n_critics: int = hp(2, "Q networks; targets use their minimum", low=1, high=MAX_CRITICS)
    critic_net_arch: list[int] | None = critic_arch_hp("qf")
    sb3_critic_key = "qf"  # the critics' key in Stable-Baselines3's net_arch mapping, dict(pi=[...], qf=[...])
    use_sde: bool = hp(False, "gSDE: state-dependent exploration noise instead of independent Gaussian noise")
    sde_sample_freq: int = hp(-1, "gSDE: resample the noise every N vector steps of a collection phase (-1: once per phase)", low=-1)
    log_std_init: float = hp(-3.0, "gSDE: initial log std of the exploration weights", low=-20, high=20)
    encoder: str = encoder_hp()

    def validate(self) -> None:
        """Cross-field checks."""
        super().validate()
        parse_ent_coef(self.ent_coef)
        if self.sde_sample_freq == 0:
            raise CanterError("'hparams.sde_sample_freq' must be -1 or >= 1, got 0")


@register("algorithm", "sac")
class SAC(Algorithm):
    """Soft Actor-Critic: stochastic tanh-Gaussian actor, twin critics, learned entropy coefficient."""

    name = "sac"
    family = "off_policy"
    Config = SACConfig
    default_model = "mlp_sac"
    model_methods = ("actor", "critic")  # the squashed Gaussian actor and the Q networks (modules)
    default_n_envs = 1
    action_spaces = (gym.spaces.Box,)
    squashed_actions = True

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: SACConfig, **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        c = config
        self.model = self.make_model(
            net_arch=c.net_arch, activation=c.activation, n_critics=c.n_critics, use_sde=c.use_sde,
            log_std_init=c.log_std_init, **encoder_kwargs(c), **critic_arch_kwargs(c),
        )
        self.actor, self.critic = self.model.actor, self.model.critic
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.critic_params = list(self.critic.parameters())
        self.update_target = SoftUpdate(self.critic_target, self.critic)
        self.actor_optimizer = make_adam(list(self.actor.parameters()), c.lr)
        self.critic_optimizer = make_adam(list(self.critic.parameters()), c.lr)
        dim = float(np.prod(action_space.shape))
        target = -dim if c.target_entropy is None else float(c.target_entropy)
        self.ent_coef = EntropyCoef(c.ent_coef, c.lr, target, self.device)
        self.last_priorities: torch.Tensor | None = None
        self.sde_weights: torch.Tensor | None = None  # [n_envs, latent, action] exploration matrices
        self.act_calls = 0

    # -- acting -------------------------------------------------------------------------------
    def act(self, obs: torch.Tensor, deterministic: bool = False) -> ActOutput:
        """``tanh(mean)`` when deterministic, else a sample (Gaussian or gSDE noise) squashed by tanh."""
        mean, log_std, latent = self.actor(obs)
        if deterministic:
            return ActOutput(torch.tanh(mean))
        if self.config.use_sde:
            noise = torch.bmm(latent.unsqueeze(1), self._exploration_weights(latent.shape[0])).squeeze(1)
        else:
            noise = log_std.exp() * D.randn(mean.shape, self.generator, mean)
        return ActOutput(torch.tanh(mean + noise))

    def new_phase(self) -> None:
        """The off-policy trainer's collection phase ended (a training phase follows): the next
        action draws new gSDE matrices and ``sde_sample_freq`` counts from it, so each collection
        phase starts with its own, as Stable-Baselines3 resamples at the start of every
        ``collect_rollouts`` (counting acting calls over the run drifted off the phases by
        ``learning_starts mod train_freq``, and off SB3's per-phase count for a positive frequency)."""
        if self.config.use_sde:
            self.act_calls = 0

    def warmup_step(self) -> None:
        """A vector step of uniform random warm-up actions (before ``learning_starts``; no :meth:`act`): with
        gSDE it counts towards the phase's ``sde_sample_freq`` as an acting call, as Stable-Baselines3's
        ``collect_rollouts`` counts every step of the phase (``num_collected_steps``), random or not, so in the
        phase where the warm-up ends the matrices are resampled every N steps from the phase's start, not
        from its first policy step."""
        if self.config.use_sde:
            self.act_calls += 1

    def _exploration_weights(self, n: int) -> torch.Tensor:
        """gSDE: per-env noise matrices, drawn at each collection phase's first policy action and then every
        ``sde_sample_freq`` vector steps counted from the phase's start (its warm-up steps included:
        :meth:`warmup_step`; -1: once per phase)."""
        c = self.config
        if c.sde_sample_freq > 0:
            fresh = self.act_calls % c.sde_sample_freq == 0
        elif c.train_freq_unit == "episode":  # -1: once per phase, whose length is not known in advance
            fresh = self.act_calls == 0
        else:
            fresh = self.act_calls % max(1, math.ceil(c.train_freq / n)) == 0
        if self.sde_weights is None or self.sde_weights.shape[0] != n or fresh:
            std = self.actor.sde_log_std.detach().exp()
            self.sde_weights = std * D.randn((n,) + tuple(std.shape), self.generator, std)
        self.act_calls += 1
        return self.sde_weights

    def sample(self, obs: torch.Tensor, sde_weights: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterised actions in ``[-1, 1]`` and their log-probabilities (tanh-corrected).

        With gSDE one matrix ``sde_weights`` ``[latent, action]`` serves the whole batch and the
        log-probability is that of ``N(mean, latent^2 @ std^2)``, as in Stable-Baselines3. The noise and
        its variance read the features ``latent`` with their gradient, as Stable-Baselines3's SAC actor
        (and sb3-contrib's TQC's) builds its gSDE distribution with ``learn_features=True`` (the
        distribution class's default, False, is the on-policy actors'): the entropy and Q terms
        train the actor's hidden layers through the noise path too.
        """
        mean, log_std, latent = self.actor(obs)
        if self.config.use_sde:
            std = log_std.exp()
            if sde_weights is None:
                sde_weights = self._train_weights(std)
            u = mean + latent @ sde_weights
            log_sigma = 0.5 * torch.log((latent * latent) @ (std * std) + 1e-6)
            log_prob = gaussian_log_prob(mean, log_sigma, u)
            return torch.tanh(u), log_prob - tanh_log_det(u)
        eps = D.randn(mean.shape, self.generator, mean)
        u = mean + log_std.exp() * eps
        # log N(u; mean, std) - log|det d tanh(u)/du|, summed over action dims in one reduction
        log_prob = (-0.5 * eps * eps - log_std - 2.0 * (_LOG2 - u - F.softplus(-2.0 * u))).sum(-1)
        return torch.tanh(u), log_prob - _HALF_LOG_2PI * mean.shape[-1]

    def _train_weights(self, std: torch.Tensor) -> torch.Tensor:
        return std * D.randn(std.shape, self.generator, std)

    # -- learning -----------------------------------------------------------------------------
    def critic_loss(
        self, batch: ReplayBatch, alpha: torch.Tensor, sde_weights: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``0.5 * sum_i mean(w * (Q_i(s, a) - y)^2)`` and the TD errors ``[n_critics, B]``."""
        with torch.no_grad():
            next_actions, next_log_prob = self.sample(batch.next_obs, sde_weights)
            next_q = self.critic_target(batch.next_obs, next_actions).min(0).values - alpha * next_log_prob
            target = batch.rewards + batch.discounts * (1.0 - batch.terminated) * next_q
        td = self.critic(batch.obs, batch.actions) - target
        return 0.5 * (batch.weights * td.pow(2)).mean(1).sum(), td

    def actor_loss(
        self, obs: torch.Tensor, alpha: torch.Tensor, actions: torch.Tensor | None = None,
        log_prob: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``mean(alpha * log pi(a|s) - Q(s, a))`` with :meth:`policy_value` as ``Q``; the critics get no gradient."""
        if actions is None or log_prob is None:
            actions, log_prob = self.sample(obs)
        with frozen(self.critic_params):
            q = self.policy_value(obs, actions)
        return (alpha * log_prob - q).mean()

    def policy_value(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The value the actor maximises, ``[B]``: the critics' minimum ``min_i Q_i(s, a)``."""
        return self.critic(obs, actions).min(0).values

    def learn(self, batch: ReplayBatch) -> dict[str, float]:
        """One SAC gradient step (entropy coefficient, critics, actor, targets)."""
        c = self.config
        self.updates += 1
        sde_weights = self._train_weights(self.actor.sde_log_std.exp()) if c.use_sde else None
        actions, log_prob = self.sample(batch.obs, sde_weights)
        alpha = self.ent_coef.value  # the value before this step's update, as in SB3
        stats = {"ent_coef": alpha.item(), **self.ent_coef.update(-log_prob)}
        critic_loss, td = self.critic_loss(batch, alpha, sde_weights)
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_optimizer.step()
        actor_loss = self.actor_loss(batch.obs, alpha, actions, log_prob)
        self.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_optimizer.step()
        if self.updates % c.target_update_interval == 0:
            self.update_target(c.tau)
        self.last_priorities = mean_over_critics(td)
        stats.update(critic_loss=critic_loss.item(), actor_loss=actor_loss.item())
        return stats

    # -- state --------------------------------------------------------------------------------
    def modules(self) -> dict[str, nn.Module]:  # noqa: D102
        return {"model": self.model, "critic_target": self.critic_target}

    def optimizers(self) -> dict[str, Any]:  # noqa: D102
        return self.ent_coef.with_optimizers(actor=self.actor_optimizer, critic=self.critic_optimizer)

    def extra_state(self) -> dict[str, Any]:  # noqa: D102
        state: dict[str, Any] = {"log_alpha": self.ent_coef.state(), "act_calls": self.act_calls}
        if self.sde_weights is not None:
            state["sde_weights"] = self.sde_weights.clone()
        return state

    def load_state_dict(self, state: dict[str, Any], weights_only: bool = False) -> None:
        """:meth:`Algorithm.load_state_dict`; ``weights_only`` (``init_from``) also hands a learned entropy
        coefficient the source's value (:meth:`EntropyCoef.take_over`), as Stable-Baselines3's load restores it."""
        super().load_state_dict(state, weights_only=weights_only)
        if weights_only:
            self.ent_coef.take_over((state.get("extra") or {}).get("log_alpha"))

    def load_extra_state(self, state: dict[str, Any]) -> None:  # noqa: D102
        self.ent_coef.load(state.get("log_alpha"))
        self.act_calls = int(state.get("act_calls", 0))
        weights = state.get("sde_weights")
        self.sde_weights = None if weights is None else torch.as_tensor(weights, device=self.device).clone()
