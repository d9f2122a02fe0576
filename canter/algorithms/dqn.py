"""Deep Q-Network: target network (hard or Polyak), epsilon-greedy schedule, Huber loss,
Double DQN and dueling heads as options.

Target updates and epsilon are counted in environment steps, as in Stable-Baselines3, so
rl-zoo3 hyperparameters carry over unchanged.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from torch import nn
from torch.nn import functional as F

from canter.algorithms.base import ActOutput, Algorithm, clip_grad_norm_, linear, make_adam
from canter.config import hp
from canter.data.batch import ReplayBatch
from canter.registry import register


@dataclass
class DQNConfig:
    """DQN hyperparameters."""

    lr: float = hp(1e-4, "Adam learning rate", low=0, low_open=True, search={"low": 1e-5, "high": 1e-2, "log": True})
    buffer_size: int = hp(1_000_000, "replay buffer capacity (transitions)", low=1)
    learning_starts: int = hp(100, "env steps collected before learning starts", low=0)
    batch_size: int = hp(32, "minibatch size", low=1, search={"choices": [32, 64, 128, 256]})
    gamma: float = hp(0.99, "discount factor", low=0, high=1, search={"choices": [0.95, 0.98, 0.99, 0.995]})
    tau: float = hp(1.0, "target update rate (1: hard copy, <1: Polyak averaging)", low=0, high=1, low_open=True)
    target_update_interval: int = hp(10_000, "env steps between target updates", low=1)
    train_freq: int = hp(4, "env steps between training phases", low=1, search={"choices": [1, 4, 16, 64, 256]})
    gradient_steps: int = hp(1, "gradient steps per training phase", low=1, search={"choices": [1, 4, 16, 64, 128]})
    exploration_fraction: float = hp(0.1, "fraction of the budget over which epsilon decays", low=0, high=1)
    exploration_initial_eps: float = hp(1.0, "initial epsilon", low=0, high=1)
    exploration_final_eps: float = hp(0.05, "final epsilon", low=0, high=1)
    max_grad_norm: float = hp(10.0, "global gradient-norm clip", low=0, low_open=True)
    huber: bool = hp(True, "Huber (smooth L1) TD loss; false: squared error")
    double_q: bool = hp(False, "Double DQN: online net picks the next action, target net values it")
    dueling: bool = hp(False, "dueling value/advantage heads")
    net_arch: list[int] = hp([64, 64], "hidden layer sizes", low=1)
    activation: str = hp("relu", "hidden activation", choices=("tanh", "relu", "elu", "gelu", "silu"))
    normalize_obs: bool = hp(False, "normalise observations with running mean/std")
    normalize_reward: bool = hp(False, "scale rewards by the running std of the discounted return")


@register("algorithm", "dqn")
class DQN(Algorithm):
    """DQN and its Double / dueling variants for Discrete action spaces."""

    name = "dqn"
    family = "off_policy"
    Config = DQNConfig
    default_model = "mlp_q"
    default_n_envs = 1
    action_spaces = (gym.spaces.Discrete,)

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: DQNConfig, **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        c = config
        self.q = self.make_model(net_arch=c.net_arch, activation=c.activation, dueling=c.dueling)
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
        tau = self.config.tau
        with torch.no_grad():
            if tau >= 1.0:  # one multi-tensor copy (load_state_dict costs ~10x more per call)
                torch._foreach_copy_(self._target_params, self._online_params)
            else:
                torch._foreach_lerp_(self._target_params, self._online_params, tau)

    def learn(self, batch: ReplayBatch) -> dict[str, float]:
        """One gradient step on the TD error of ``batch``."""
        c = self.config
        q = self.q.value(batch.obs).gather(1, batch.actions.long().view(-1, 1)).squeeze(1)
        with torch.no_grad():
            next_q = self.q_target.value(batch.next_obs)
            if c.double_q:
                best = self.q.value(batch.next_obs).argmax(1, keepdim=True)
                next_v = next_q.gather(1, best).squeeze(1)
            else:
                next_v = next_q.max(1).values
            target = batch.rewards + batch.discounts * (1.0 - batch.terminated) * next_v
        td = q - target
        per_sample = F.smooth_l1_loss(q, target, reduction="none") if c.huber else td.pow(2)
        loss = (batch.weights * per_sample).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip_grad_norm_(self.optimizer, self.params, c.max_grad_norm)
        self.optimizer.step()
        self.updates += 1
        self.last_priorities = td.detach().abs()
        return {"loss": loss.item(), "q_mean": q.detach().mean().item()}

    def extra_state(self) -> dict[str, Any]:  # noqa: D102
        return {"epsilon": self.epsilon, "target_syncs": self.target_syncs}

    def load_extra_state(self, state: dict[str, Any]) -> None:  # noqa: D102
        self.epsilon = float(state.get("epsilon", self.epsilon))
        self.target_syncs = int(state.get("target_syncs", 0))

    def modules(self) -> dict[str, nn.Module]:  # noqa: D102
        return {"q": self.q, "q_target": self.q_target}

    def optimizers(self) -> dict[str, Any]:  # noqa: D102
        return {"optimizer": self.optimizer}
