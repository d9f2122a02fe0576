"""Soft Actor-Critic for Discrete actions (Christodoulou 2019).

With a categorical policy the expectations over actions are exact sums, so nothing is sampled in
the update: the critics output ``Q_i(s, .)`` for every action and regress on
``y = r + discount * (1 - terminated) * sum_a' pi(a'|s') (min_i Q'_i(s', a') - alpha log pi(a'|s'))``;
the actor minimises ``sum_a pi(a|s) (alpha log pi(a|s) - min_i Q_i(s, a))``; alpha is tuned so
the policy's entropy tracks ``target_entropy_scale * log(n_actions)``.
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
from canter.algorithms.offpolicy import EntropyCoef, OffPolicyConfig, SoftUpdate, mean_over_critics, parse_ent_coef
from canter.config import MAX_CRITICS, hp
from canter.data.batch import ReplayBatch
from canter.models import distributions as D
from canter.registry import register


@dataclass
class DiscreteSACConfig(OffPolicyConfig):
    """Discrete SAC hyperparameters."""

    ent_coef: str = hp("auto", "entropy coefficient: 'auto' (learned, starts at 1, or at init_from's learned value), "
                              "'auto_<init>', or a fixed number")
    target_entropy_scale: float = hp(0.89, "entropy target as a fraction of the maximum, log(n_actions)", low=0, high=1)
    target_update_interval: int = hp(1, "gradient steps between target-network updates", low=1)
    n_critics: int = hp(2, "Q networks; targets use their minimum", low=1, high=MAX_CRITICS)
    critic_net_arch: list[int] | None = critic_arch_hp("qf")
    sb3_critic_key = "qf"  # the critics' key in Stable-Baselines3's net_arch mapping, dict(pi=[...], qf=[...])
    encoder: str = encoder_hp()

    def validate(self) -> None:
        """Cross-field checks."""
        super().validate()
        parse_ent_coef(self.ent_coef)


@register("algorithm", "sac_discrete")
class DiscreteSAC(Algorithm):
    """Soft Actor-Critic for Discrete actions: categorical actor, twin Q(s, .) critics."""

    name = "sac_discrete"
    family = "off_policy"
    Config = DiscreteSACConfig
    default_model = "mlp_sac_discrete"
    model_methods = ("encoder", "actor", "q", "action", "value")
    default_n_envs = 1
    action_spaces = (gym.spaces.Discrete,)

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: DiscreteSACConfig,
                 **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        c = config
        self.model = self.make_model(net_arch=c.net_arch, activation=c.activation, n_critics=c.n_critics,
                                     **encoder_kwargs(c), **critic_arch_kwargs(c))
        # the target is the Q networks, and with a convolutional encoder the critic's encoder before them
        critic_encoder = getattr(self.model, "critic_encoder", None)
        critic = self.model.q if critic_encoder is None else nn.Sequential(critic_encoder, self.model.q)
        self.critic_target = copy.deepcopy(critic).requires_grad_(False)
        self._target_encoded = critic_encoder is None  # the target takes the shared encoder's features
        self.update_target = SoftUpdate(self.critic_target, critic)
        self.actor_optimizer = make_adam(list(self.model.actor.parameters()) + list(self.model.encoder.parameters()), c.lr)
        self.critic_optimizer = make_adam(list(critic.parameters()), c.lr)
        self.ent_coef = EntropyCoef(c.ent_coef, c.lr, c.target_entropy_scale * math.log(int(action_space.n)), self.device)
        self.last_priorities: torch.Tensor | None = None

    def act(self, obs: torch.Tensor, deterministic: bool = False) -> ActOutput:
        """The most likely action when deterministic, else a sample from the policy."""
        logits = self.model.action(obs)
        if deterministic:
            return ActOutput(logits.argmax(-1))
        return ActOutput(D.categorical_sample(logits, self.generator))

    def critic_loss(self, batch: ReplayBatch, alpha: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``0.5 * sum_i mean(w * (Q_i(s, a) - y)^2)`` and the TD errors ``[n_critics, B]``."""
        with torch.no_grad():
            next_logp = torch.log_softmax(self.model.action(batch.next_obs), -1)
            next_in = self.model.encoder(batch.next_obs) if self._target_encoded else batch.next_obs
            next_q = self.critic_target(next_in).min(0).values
            next_v = (next_logp.exp() * (next_q - alpha * next_logp)).sum(-1)
            target = batch.rewards + batch.discounts * (1.0 - batch.terminated) * next_v
        q = self.model.value(batch.obs)  # [E, B, A]
        index = batch.actions.long().view(1, -1, 1).expand(q.shape[0], -1, 1)
        td = q.gather(2, index).squeeze(2) - target
        return 0.5 * (batch.weights * td.pow(2)).mean(1).sum(), td

    def actor_loss(self, obs: torch.Tensor, alpha: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``mean_s sum_a pi(a|s) (alpha log pi(a|s) - min_i Q_i(s, a))`` and the policy entropy ``[B]``."""
        logp = torch.log_softmax(self.model.action(obs), -1)
        with torch.no_grad():
            q = self.model.value(obs).min(0).values
        probs = logp.exp()
        return (probs * (alpha * logp - q)).sum(-1).mean(), D.categorical_entropy(logp)

    def learn(self, batch: ReplayBatch) -> dict[str, float]:
        """One gradient step: critics, actor, entropy coefficient, targets."""
        c = self.config
        self.updates += 1
        alpha = self.ent_coef.value
        critic_loss, td = self.critic_loss(batch, alpha)
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_optimizer.step()
        actor_loss, entropy = self.actor_loss(batch.obs, alpha)
        self.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_optimizer.step()
        stats = {"critic_loss": critic_loss.item(), "actor_loss": actor_loss.item(), "ent_coef": alpha.item(),
                 "entropy": entropy.mean().item(), **self.ent_coef.update(entropy)}
        if self.updates % c.target_update_interval == 0:
            self.update_target(c.tau)
        self.last_priorities = mean_over_critics(td)
        return stats

    def modules(self) -> dict[str, nn.Module]:  # noqa: D102
        return {"model": self.model, "critic_target": self.critic_target}

    def optimizers(self) -> dict[str, Any]:  # noqa: D102
        return self.ent_coef.with_optimizers(actor=self.actor_optimizer, critic=self.critic_optimizer)

    def extra_state(self) -> dict[str, Any]:  # noqa: D102
        return {"log_alpha": self.ent_coef.state()}

    def load_state_dict(self, state: dict[str, Any], weights_only: bool = False) -> None:
        """:meth:`Algorithm.load_state_dict`; ``weights_only`` (``init_from``) also hands a learned entropy
        coefficient the source's value (:meth:`EntropyCoef.take_over`), as Stable-Baselines3's load restores it."""
        super().load_state_dict(state, weights_only=weights_only)
        if weights_only:
            self.ent_coef.take_over((state.get("extra") or {}).get("log_alpha"))

    def load_extra_state(self, state: dict[str, Any]) -> None:  # noqa: D102
        self.ent_coef.load(state.get("log_alpha"))
