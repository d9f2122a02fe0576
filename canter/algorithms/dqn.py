"""Deep Q-Network and its extensions: target network (hard or Polyak), epsilon-greedy schedule,
Huber loss, and as options Double DQN, dueling heads, n-step returns, prioritized replay and a
QR-DQN distributional head; with all of them on it is a Rainbow-style agent (``rainbow``).

Target updates and epsilon are counted in environment steps, as in Stable-Baselines3, so
rl-zoo3 hyperparameters carry over unchanged. n-step returns and prioritized sampling live in
the replay buffer; here they show up as ``batch.discounts`` (``gamma ** k``) and
``batch.weights`` (importance weights), and ``last_priorities`` feeds priorities back.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from torch import nn
from torch.nn import functional as F

from canter.algorithms.base import ActOutput, Algorithm, clip_grad_norm_, encoder_kwargs, linear, make_adam
from canter.algorithms.offpolicy import OffPolicyConfig, polyak
from canter.config import hp
from canter.data.batch import ReplayBatch
from canter.models.distributional import quantile_huber_loss
from canter.registry import register


@dataclass
class DQNConfig(OffPolicyConfig):
    """DQN hyperparameters (Stable-Baselines3's defaults; every extension off)."""

    lr: float = hp(1e-4, "Adam learning rate", low=0, low_open=True, search={"low": 1e-5, "high": 1e-2, "log": True})
    batch_size: int = hp(32, "minibatch size", low=1, search={"choices": [32, 64, 128, 256]})
    tau: float = hp(1.0, "target update rate (1: hard copy, <1: Polyak averaging)", low=0, high=1, low_open=True)
    train_freq: int = hp(4, "env steps between training phases", low=1, search={"choices": [1, 4, 16, 64, 256]})
    gradient_steps: int = hp(1, "gradient steps per training phase", low=1, search={"choices": [1, 4, 16, 64, 128]})
    net_arch: list[int] = hp([64, 64], "hidden layer sizes", low=1)
    target_update_interval: int = hp(10_000, "env steps between target updates", low=1)
    exploration_fraction: float = hp(0.1, "fraction of the budget over which epsilon decays", low=0, high=1)
    exploration_initial_eps: float = hp(1.0, "initial epsilon", low=0, high=1)
    exploration_final_eps: float = hp(0.05, "final epsilon", low=0, high=1)
    max_grad_norm: float = hp(10.0, "global gradient-norm clip", low=0, low_open=True)
    huber: bool = hp(True, "Huber (smooth L1) TD loss; false: squared error")
    double_q: bool = hp(False, "Double DQN: online net picks the next action, target net values it")
    dueling: bool = hp(False, "dueling value/advantage heads")
    n_quantiles: int = hp(0, "QR-DQN distributional head with this many quantiles (0: plain Q values)", low=0)
    encoder: str = hp("auto", "observation encoder: auto (nature CNN for uint8 images, flat otherwise), nature, impala, "
                      "flat, or module:Class")


@register("algorithm", "dqn")
class DQN(Algorithm):
    """DQN with optional Double, dueling, n-step, prioritized replay and quantile (QR-DQN) extensions."""

    name = "dqn"
    family = "off_policy"
    Config = DQNConfig
    default_model = "mlp_q"
    default_n_envs = 1
    action_spaces = (gym.spaces.Discrete,)

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: DQNConfig, **kw: Any) -> None:
        if config.n_quantiles and kw.get("model") is None:
            kw["model"] = "mlp_qr"
        super().__init__(observation_space, action_space, config, **kw)
        c = config
        extra = {"n_quantiles": c.n_quantiles} if c.n_quantiles else {}
        self.q = self.make_model(net_arch=c.net_arch, activation=c.activation, dueling=c.dueling, **extra,
                                 **encoder_kwargs(c))
        self.q_target = copy.deepcopy(self.q).requires_grad_(False)
        self.params = list(self.q.parameters())
        self.optimizer = make_adam(self.params, c.lr)
        self._online_params, self._target_params = self.params, list(self.q_target.parameters())
        self.n_actions = int(action_space.n)
        self.epsilon = c.exploration_initial_eps
        self.target_syncs = 0
        self.last_priorities: torch.Tensor | None = None

    def act(self, obs: torch.Tensor, deterministic: bool = False) -> ActOutput:
        """Greedy actions, or epsilon-greedy when exploring."""
        greedy = self.q.value(obs).argmax(-1)
        if deterministic or self.epsilon <= 0:
            return ActOutput(greedy)
        n = greedy.shape[0]
        explore = torch.rand(n, generator=self.generator) < self.epsilon
        random_actions = torch.randint(self.n_actions, (n,), generator=self.generator)
        return ActOutput(torch.where(explore, random_actions, greedy))

    def set_progress(self, step: int, total_steps: int) -> None:
        """Epsilon schedule and target-network updates, both counted in env steps."""
        c = self.config
        self.epsilon = linear(
            c.exploration_initial_eps, c.exploration_final_eps, c.exploration_fraction, step / max(1, total_steps)
        )
        due = step // c.target_update_interval
        if due > self.target_syncs:
            self.target_syncs = due
            self.sync_target()

    def sync_target(self) -> None:
        """Hard copy (tau = 1) or Polyak step towards the online network."""
        polyak(self.q_target, self.q, self.config.tau)

    def _next_action(self, batch: ReplayBatch, next_q: torch.Tensor) -> torch.Tensor:
        """Greedy next actions ``[B, 1]``: by the target net, or the online net with Double DQN."""
        online = self.q.value(batch.next_obs) if self.config.double_q else next_q
        return online.argmax(1, keepdim=True)

    def td_loss(self, batch: ReplayBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-sample loss ``[B]``, its new priorities ``[B]`` and the chosen Q values ``[B]``."""
        c = self.config
        actions = batch.actions.long().view(-1, 1)
        not_done = batch.discounts * (1.0 - batch.terminated)
        if c.n_quantiles:
            current = self.q.quantiles(batch.obs)
            current = current.gather(1, actions.unsqueeze(-1).expand(-1, 1, current.shape[2])).squeeze(1)
            with torch.no_grad():
                next_quantiles = self.q_target.quantiles(batch.next_obs)
                best = self._next_action(batch, next_quantiles.mean(-1))
                next_z = next_quantiles.gather(1, best.unsqueeze(-1).expand(-1, 1, next_quantiles.shape[2])).squeeze(1)
                target = batch.rewards.unsqueeze(1) + not_done.unsqueeze(1) * next_z
            per_sample = quantile_huber_loss(current, target)
            return per_sample, per_sample.detach(), current.detach().mean(1)
        q = self.q.value(batch.obs).gather(1, actions).squeeze(1)
        with torch.no_grad():
            next_q = self.q_target.value(batch.next_obs)
            next_v = next_q.gather(1, self._next_action(batch, next_q)).squeeze(1)
            target = batch.rewards + not_done * next_v
        per_sample = F.smooth_l1_loss(q, target, reduction="none") if c.huber else (q - target).pow(2)
        return per_sample, (q - target).detach().abs(), q.detach()

    def learn(self, batch: ReplayBatch) -> dict[str, float]:
        """One gradient step on the (importance-weighted) TD loss of ``batch``."""
        per_sample, priorities, q = self.td_loss(batch)
        loss = (batch.weights * per_sample).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip_grad_norm_(self.optimizer, self.params, self.config.max_grad_norm)
        self.optimizer.step()
        self.updates += 1
        self.last_priorities = priorities
        return {"loss": loss.item(), "q_mean": q.mean().item()}

    def extra_state(self) -> dict[str, Any]:  # noqa: D102
        return {"epsilon": self.epsilon, "target_syncs": self.target_syncs}

    def load_extra_state(self, state: dict[str, Any]) -> None:  # noqa: D102
        self.epsilon = float(state.get("epsilon", self.epsilon))
        self.target_syncs = int(state.get("target_syncs", 0))

    def modules(self) -> dict[str, nn.Module]:  # noqa: D102
        return {"q": self.q, "q_target": self.q_target}

    def optimizers(self) -> dict[str, Any]:  # noqa: D102
        return {"optimizer": self.optimizer}


@dataclass
class QRDQNConfig(DQNConfig):
    """QR-DQN: DQN with a quantile head (Dabney et al. 2018); DQN's defaults otherwise."""

    n_quantiles: int = hp(50, "QR-DQN distributional head with this many quantiles (0: plain Q values)", low=0)


@register("algorithm", "qrdqn")
class QRDQN(DQN):
    """QR-DQN: DQN learning return quantiles with the quantile Huber loss."""

    name = "qrdqn"
    Config = QRDQNConfig


@dataclass
class RainbowConfig(DQNConfig):
    """Rainbow-style DQN: Double, dueling, 3-step returns, prioritized replay, a quantile head."""

    double_q: bool = hp(True, "Double DQN: online net picks the next action, target net values it")
    dueling: bool = hp(True, "dueling value/advantage heads")
    n_step: int = hp(3, "n-step returns: rewards summed before bootstrapping", low=1, search={"choices": [1, 3, 5]})
    prioritized: bool = hp(True, "prioritized experience replay (proportional, sum tree)")
    per_alpha: float = hp(0.5, "prioritized replay: priority exponent alpha", low=0, high=1)
    n_quantiles: int = hp(50, "QR-DQN distributional head with this many quantiles (0: plain Q values)", low=0)


@register("algorithm", "rainbow")
class Rainbow(DQN):
    """Rainbow-style DQN (quantile head in place of C51, no noisy nets): every extension on."""

    name = "rainbow"
    Config = RainbowConfig
