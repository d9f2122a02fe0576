"""QMIX (Rashid et al. 2018): cooperative multi-agent Q-learning by monotonic value decomposition.

Each agent picks the action of highest Q-value from its own observation (decentralised acting);
in training a mixing network, conditioned on the global state, combines the agents' chosen
values into ``Q_tot``, which is regressed on the team reward's TD target. The mixing weights are
non-negative, so each agent's greedy action is also greedy for ``Q_tot``.

It runs on multi-agent envs (``--env pettingzoo:MODULE``) with ``policies: joint``, set
automatically: each env copy is one sub-env with a joint observation (agents' rows plus the
state) and a ``MultiDiscrete`` joint action (:class:`~canter.envs.multiagent_views.JointParallelEnv`),
so the off-policy trainer and replay buffers (n-step, prioritized) run unchanged. Differences
from the paper, on purpose: the agent network is feed-forward (no GRU over the history) and the
replay holds transitions, not whole episodes; the global state is the env's ``state()`` where it
has one, else every agent's observation concatenated.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch.nn import functional as F

from canter.algorithms.base import ActOutput, Algorithm, clip_grad_norm_
from canter.algorithms.dqn import EpsilonGreedyConfig, EpsilonGreedyTargets
from canter.config import hp
from canter.data.batch import ReplayBatch
from canter.envs.masks import mask_width, split_mask
from canter.errors import CanterError
from canter.registry import register


@dataclass
class QMIXConfig(EpsilonGreedyConfig):
    """QMIX hyperparameters: PyMARL's learning rate, epsilon, network sizes and hard target copies
    every ~5,000 env steps (200 episodes of 25 steps), with a Huber loss (the paper's is squared
    error: ``huber: false``); on MPE's simple_spread
    more frequent target updates (hard every 200 steps, or Polyak 0.005 every step) made ``Q_tot``
    diverge (docs/multiagent.md)."""

    lr: float = hp(5e-4, "Adam learning rate", low=0, low_open=True, search={"low": 1e-5, "high": 3e-3, "log": True})
    buffer_size: int = hp(100_000, "replay buffer capacity (joint transitions)", low=1)
    learning_starts: int = hp(1_000, "env steps of uniform random joint actions before learning starts", low=0)
    batch_size: int = hp(128, "minibatch size (joint transitions)", low=1, search={"choices": [32, 64, 128, 256]})
    net_arch: list[int] = hp([64], "the agent Q-network's hidden layer sizes", low=1)
    target_update_interval: int = hp(5_000, "env steps between target updates (PyMARL: 200 episodes)", low=1)
    double_q: bool = hp(True, "the online agent networks pick the next actions, the target networks value them")
    mixing_embed_dim: int = hp(32, "the mixing network's hidden width", low=1)
    hypernet_dim: int = hp(64, "the hypernetworks' hidden width", low=1)


@register("algorithm", "qmix")
class QMIX(EpsilonGreedyTargets, Algorithm):
    """QMIX with feed-forward agents on a :class:`~canter.envs.multiagent_views.JointParallelEnv`."""

    name = "qmix"
    family = "off_policy"
    Config = QMIXConfig
    default_model = "qmix"
    default_n_envs = 1
    action_spaces = (gym.spaces.MultiDiscrete,)
    #: acts for all of a multi-agent env's agents at once: the run uses ``policies: joint``
    joint_agents = True
    multiagent_only = True
    action_masks = True  # the agents' Q-values are masked; exploration draws allowed actions

    @classmethod
    def check_spaces(cls, observation_space: gym.Space, action_space: gym.Space) -> None:
        """A joint multi-agent env: ``[k + 1, w]`` observations, ``k`` equal Discrete actions."""
        nvec = getattr(action_space, "nvec", None)
        if (not isinstance(action_space, gym.spaces.MultiDiscrete) or not isinstance(observation_space, gym.spaces.Box)
                or len(observation_space.shape) != 2 or nvec.ndim != 1
                or observation_space.shape[0] != len(nvec) + 1 or (nvec != nvec[0]).any()):
            raise CanterError("QMIX needs a multi-agent env (--env pettingzoo:MODULE) whose agents share one Discrete "
                              "action space")

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: QMIXConfig, **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        c = config
        self.k, self.n_actions = len(action_space.nvec), int(action_space.nvec[0])
        # (a joint observation without mask columns is a run saved before the alive mask: canter.load still loads it)
        if mask_width(observation_space) and self.model_cls is not None \
                and not getattr(self.model_cls, "action_masks", False):  # said the env had one
            raise CanterError(f"model {self.model_cls.__name__} does not apply action masks, and QMIX's joint "
                              f"observation always carries one: the env's, or where the env has none the alive mask "
                              f"canter adds (an agent out of the episode takes action 0; since 2026-11-28); set "
                              f"'action_masks = True' on the class and apply it (canter.envs.masks.split_mask, "
                              f"apply_mask_below)")
        self.init_value_learning(self.make_model(net_arch=c.net_arch, activation=c.activation,
                                                 embed_dim=c.mixing_embed_dim, hypernet_dim=c.hypernet_dim))

    def act(self, obs: torch.Tensor, deterministic: bool = False) -> ActOutput:
        """Each agent's greedy action ``[B, k]``; each replaced by a random one with probability epsilon."""
        b, m = len(obs), mask_width(self.observation_space)
        allowed = split_mask(obs[:, :self.k].cpu().numpy(), m)[1].reshape(b * self.k, -1) if m and not deterministic else None
        actions = self._epsilon_greedy(lambda: self.q.agent_q(obs).argmax(-1).reshape(-1).cpu().numpy(), b * self.k,
                                       deterministic, allowed)
        return ActOutput(torch.from_numpy(np.ascontiguousarray(actions).reshape(b, self.k)))

    def td_target(self, batch: ReplayBatch) -> torch.Tensor:
        """``r + gamma^n (1 - terminated) Q_tot'(s', a')`` with the target networks ``[B]``."""
        with torch.no_grad():
            next_q = self.q_target.agent_q(batch.next_obs)
            pick = self.q.agent_q(batch.next_obs) if self.config.double_q else next_q
            best = next_q.gather(2, pick.argmax(2, keepdim=True)).squeeze(2)
            return batch.rewards + batch.discounts * (1.0 - batch.terminated) * self.q_target.mix(best, batch.next_obs)

    def learn(self, batch: ReplayBatch) -> dict[str, float]:
        """One gradient step on the (importance-weighted) TD loss of ``Q_tot``."""
        target = self.td_target(batch)
        chosen = self.q.agent_q(batch.obs).gather(2, batch.actions.long().unsqueeze(2)).squeeze(2)
        q_tot = self.q.mix(chosen, batch.obs)
        diff = q_tot - target
        per_sample = F.smooth_l1_loss(q_tot, target, reduction="none") if self.config.huber else diff.pow(2)
        loss = (batch.weights * per_sample).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.last_priorities = diff.detach().abs()
        clip_grad_norm_(self.optimizer, self.params, self.config.max_grad_norm)
        self.optimizer.step()
        self.updates += 1
        loss_value, q_mean, agent_q = torch.stack([loss.detach(), q_tot.detach().mean(), chosen.detach().mean()]).tolist()
        return {"loss": loss_value, "q_tot_mean": q_mean, "agent_q_mean": agent_q}
