"""Epsilon-greedy exploration with a target network, counted in env steps: the config fields
(:class:`EpsilonGreedyConfig`) and the mixin (:class:`EpsilonGreedyTargets`) that DQN and its kin and QMIX share.
:mod:`canter.algorithms.dqn` re-exports both."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from canter.algorithms.base import linear, make_adam
from canter.algorithms.offpolicy import OffPolicyConfig, SoftUpdate
from canter.config import hp
from canter.envs.masks import random_allowed


@dataclass
class EpsilonGreedyConfig(OffPolicyConfig):
    """The fields of :class:`EpsilonGreedyTargets`: exploration, target updates and the TD loss
    (Stable-Baselines3's DQN defaults)."""

    tau: float = hp(1.0, "target update rate (1: hard copy, <1: Polyak averaging)", low=0, high=1, low_open=True)
    target_update_interval: int = hp(10_000, "env steps between target updates", low=1)
    exploration_fraction: float = hp(0.1, "fraction of the budget over which epsilon decays", low=0, high=1)
    exploration_initial_eps: float = hp(1.0, "initial epsilon", low=0, high=1)
    exploration_final_eps: float = hp(0.05, "final epsilon", low=0, high=1)
    max_grad_norm: float | None = hp(10.0, "global gradient-norm clip (null: none, as sb3-contrib's QR-DQN)", low=0,
                                     low_open=True)
    adam_eps: float = hp(1e-8, "Adam epsilon (Rainbow's Atari setting: 1.5e-4)", low=0, low_open=True)
    huber: bool = hp(True, "Huber (smooth L1) TD loss; false: squared error (plain Q values only: not with "
                                "n_quantiles > 0, iqn or c51)")
    double_q: bool = hp(False, "Double DQN: online net picks the next action, target net values it")


class EpsilonGreedyTargets:
    """Epsilon-greedy exploration and target-network syncs counted in env steps, for value-based
    algorithms (DQN, QMIX) with one online Q-model ``q``, its target copy and one Adam optimizer
    (:meth:`init_value_learning`). The class sets ``n_actions``; its config has ``lr`` and the
    ``exploration_*``, ``tau`` and ``target_update_interval`` fields."""

    epsilon: float
    n_actions: int
    target_syncs: int
    generator: torch.Generator
    config: Any
    _update_target: SoftUpdate

    def init_value_learning(self, q: nn.Module) -> None:
        """Take ``q`` as the online network: a frozen target copy, Adam, the schedule's start."""
        self.q = q
        self.q_target = copy.deepcopy(q).requires_grad_(False)
        self.params = list(q.parameters())
        self.optimizer = make_adam(self.params, self.config.lr, self.config.adam_eps)
        self._update_target = SoftUpdate(self.q_target, q)  # parameter lists collected once
        self.epsilon = self.config.exploration_initial_eps
        self.target_syncs = 0
        self.last_priorities: torch.Tensor | None = None

    def modules(self) -> dict[str, nn.Module]:
        """The online and target Q-networks."""
        return {"q": self.q, "q_target": self.q_target}

    def optimizers(self) -> dict[str, Any]:
        """The Q-network's optimizer."""
        return {"optimizer": self.optimizer}

    def _epsilon_greedy(self, greedy: Callable[[], np.ndarray], n: int, deterministic: bool,
                        allowed: np.ndarray | None = None) -> np.ndarray:
        """``greedy()``, each entry replaced by a random action with probability epsilon when exploring
        (one of the ``allowed`` ones, ``[n, n_actions]``, under an action mask).

        The explore coins are drawn first, so the Q-network runs only when some env acts greedily
        (Stable-Baselines3 skips it the same way); the random draws are the same either way.
        """
        if deterministic or self.epsilon <= 0:
            return greedy()
        explore = torch.rand(n, generator=self.generator).numpy() < self.epsilon
        exploring = np.count_nonzero(explore)  # (any() and all() cost ~1 µs each)
        if not exploring:  # most steps once epsilon is small: no random actions drawn
            return greedy()
        chosen = None if exploring == n else greedy()  # early on, most steps: no forward pass at all
        if allowed is None:
            random_actions = torch.randint(self.n_actions, (n,), generator=self.generator).numpy()
        else:
            random_actions = random_allowed(allowed, self.generator)
        return random_actions if chosen is None else np.where(explore, random_actions, chosen)

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

    def exploration_stats(self) -> dict[str, float]:
        """The exploration rate the next actions take (``exploration_rate``: epsilon now, Stable-Baselines3's
        ``rollout/exploration_rate``), which the single-process off-policy trainer logs with each update; none with
        NoisyNet, whose epsilon stays 0 (the noisy layers explore)."""
        return {} if getattr(self, "noisy", False) else {"exploration_rate": float(self.epsilon)}

    def sync_target(self) -> None:
        """Hard copy (tau = 1) or Polyak step towards the online network."""
        self._update_target(self.config.tau)

    def extra_state(self) -> dict[str, Any]:
        """Epsilon and the count of target syncs, for exact resume."""
        return {"epsilon": self.epsilon, "target_syncs": self.target_syncs}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`extra_state` saved."""
        self.epsilon = float(state.get("epsilon", self.epsilon))
        self.target_syncs = int(state.get("target_syncs", 0))

    def load_state_dict(self, state: dict[str, Any], weights_only: bool = False) -> None:
        """As :meth:`Algorithm.load_state_dict`; ``weights_only`` keeps the saved epsilon too (it is how the
        policy explores: ``Agent.predict(obs, deterministic=False)`` of a loaded agent, as in SB3)."""
        super().load_state_dict(state, weights_only)
        if weights_only:
            self.epsilon = float(state.get("extra", {}).get("epsilon", self.epsilon))
