"""Conservative Q-Learning for Discrete actions (Kumar et al. 2020, CQL(H) on DQN), offline family.

DQN's TD loss plus ``cql_alpha * mean(logsumexp_a Q(s, a) - Q(s, a_data))``: the regulariser
pushes down the Q values of actions the dataset does not take in a state and up those it does,
so the greedy policy does not chase over-estimated values of unseen actions, the failure of
plain DQN on a fixed dataset. Everything else is :class:`~canter.algorithms.dqn.DQN`'s (target
network, Double DQN and dueling options, Huber loss); the target update interval counts
gradient updates, the offline trainer's steps.
"""
from __future__ import annotations

from dataclasses import dataclass
import torch
from torch.nn import functional as F

from canter.algorithms.base import clip_grad_norm_, encoder_hp
from canter.algorithms.dqn import DQN
from canter.algorithms.offpolicy import ACTIVATION_CHOICES
from canter.config import MAX_GRADIENT_STEPS, hp
from canter.data.batch import ReplayBatch
from canter.registry import register


@dataclass
class CQLConfig:
    """Discrete CQL hyperparameters."""

    lr: float = hp(1e-4, "Adam learning rate", low=0, low_open=True, search={"low": 1e-5, "high": 1e-2, "log": True})
    batch_size: int = hp(256, "minibatch size", low=1, search={"choices": [64, 128, 256, 512]})
    gradient_steps: int = hp(500, "gradient steps per trainer iteration (one log record each)", low=1,
                             high=MAX_GRADIENT_STEPS)
    gamma: float = hp(0.99, "discount factor", low=0, high=1)
    cql_alpha: float = hp(1.0, "weight of the conservative regulariser (0: plain offline DQN)", low=0,
                          search={"choices": [0.1, 0.5, 1.0, 2.0, 4.0]})
    target_update_interval: int = hp(1_000, "gradient updates between target updates", low=1)
    tau: float = hp(1.0, "target update rate (1: hard copy, <1: Polyak averaging)", low=0, high=1, low_open=True)
    net_arch: list[int] = hp([256, 256], "hidden layer sizes", low=1)
    activation: str = hp("relu", "hidden activation", choices=ACTIVATION_CHOICES)
    max_grad_norm: float = hp(10.0, "global gradient-norm clip", low=0, low_open=True)
    adam_eps: float = hp(1e-8, "Adam epsilon", low=0, low_open=True)
    huber: bool = hp(True, "Huber (smooth L1) TD loss; false: squared error")
    double_q: bool = hp(False, "Double DQN targets: online net picks the next action, target net values it")
    dueling: bool = hp(False, "dueling value/advantage heads")
    normalize_obs: bool = hp(False, "normalise observations with the dataset's mean and std")
    encoder: str = encoder_hp()
    # DQN's settings that have one value offline (properties, not hyperparameters): no exploration,
    # no quantile head, autograd
    exploration_initial_eps = exploration_final_eps = exploration_fraction = property(lambda self: 0.0)
    n_quantiles = property(lambda self: 0)
    manual_backward = property(lambda self: False)


@register("algorithm", "cql")
class DiscreteCQL(DQN):
    """Conservative Q-Learning on a dataset (Discrete actions): DQN's TD loss plus the CQL(H) term."""

    name = "cql"
    family = "offline"
    Config = CQLConfig

    def learn(self, batch: ReplayBatch, next_target: torch.Tensor | None = None) -> dict[str, float]:
        """One gradient step on ``TD loss + cql_alpha * (logsumexp Q(s, .) - Q(s, a))``."""
        c = self.config
        q_all = self.q.value(batch.obs)
        q = q_all.gather(1, batch.actions.long().view(-1, 1)).squeeze(1)
        target = self.td_target(batch, next_target)
        td = F.smooth_l1_loss(q, target) if c.huber else F.mse_loss(q, target)
        gap = (torch.logsumexp(q_all, dim=1) - q).mean()
        loss = td + c.cql_alpha * gap
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip_grad_norm_(self.optimizer, self.params, c.max_grad_norm)
        self.optimizer.step()
        self.updates += 1
        values = torch.stack([loss.detach(), td.detach(), gap.detach(), q.detach().mean()]).tolist()
        return dict(zip(("loss", "td_loss", "cql_gap", "q_mean"), values))
