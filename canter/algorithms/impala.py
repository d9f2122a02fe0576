"""IMPALA: an actor-critic learner with V-trace off-policy correction (Espeholt et al. 2018).

Explorers act with possibly stale weights and send time-major trajectories with their
behaviour log-probs; the learner recomputes log-probs and values with the current network,
corrects with truncated importance weights (V-trace, :mod:`canter.distributed.vtrace`) and takes
one gradient step per batch. Losses (masked to real transitions, averaged over them):
``-A_s log pi(a_s|x_s)`` with the V-trace advantage ``A_s``, ``vf_coef * (v_s - V(x_s))^2`` and an
entropy bonus. Differences from the paper: Adam instead of RMSProp, means instead of sums, and no
1/2 on the squared value error (the paper's baseline cost 0.5 is ``vf_coef`` 0.25 here).
Without ``--explorers`` it runs in one process (an explorer in the learner's process, so the
data is on-policy and V-trace reduces to n-step returns).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from torch import nn

from canter.algorithms.actor_critic import ActorCriticAlgorithm, PolicyNetConfig, explained_variance
from canter.algorithms.base import encoder_hp, make_adam
from canter.config import hp
from canter.data.batch import TrajectoryBatch
from canter.distributed.vtrace import VTraceReturns, vtrace
from canter.registry import register


@dataclass
class IMPALAConfig(PolicyNetConfig):
    """IMPALA hyperparameters."""

    lr: float = hp(5e-4, "Adam learning rate", low=0, low_open=True, search={"low": 1e-5, "high": 3e-3, "log": True})
    lr_schedule: str = hp("constant", "learning-rate schedule: constant or linear (to 0)", choices=("constant", "linear"))
    n_steps: int = hp(32, "unroll length: steps per env in each explorer rollout", low=1,
                      search={"choices": [16, 32, 64, 128]})
    gamma: float = hp(0.99, "discount factor", low=0, high=1, search={"choices": [0.95, 0.98, 0.99, 0.995]})
    vtrace_lambda: float = hp(1.0, "lambda of the V-trace traces (c_t = lambda * min(c_clip, pi/mu))", low=0, high=1)
    rho_clip: float = hp(1.0, "rho-bar: clip of the importance weight in the value targets", low=0, low_open=True)
    c_clip: float = hp(1.0, "c-bar: clip of the importance weight in the traces", low=0, low_open=True)
    pg_rho_clip: float = hp(1.0, "clip of the importance weight in the policy-gradient advantage", low=0, low_open=True)
    normalize_advantage: bool = hp(False, "normalise the V-trace advantages per batch")
    ent_coef: float = hp(0.01, "entropy bonus coefficient", low=0, search={"low": 1e-5, "high": 0.1, "log": True})
    vf_coef: float = hp(0.5, "value loss coefficient", low=0, search={"low": 0.1, "high": 1.0})
    max_grad_norm: float = hp(40.0, "global gradient-norm clip", low=0, low_open=True)
    adam_eps: float = hp(1e-5, "Adam epsilon", low=0, low_open=True)
    normalize_obs: bool = hp(False, "normalise observations with running mean/std (owned by the learner)")
    shared_trunk: bool = hp(False, "share the hidden layers between actor and critic")
    encoder: str = encoder_hp()


@register("algorithm", "impala")
class IMPALA(ActorCriticAlgorithm):
    """IMPALA: asynchronous actor-critic with V-trace off-policy correction."""

    name = "impala"
    family = "async"
    Config = IMPALAConfig

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: Any, **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        c = config
        self.params = list(self.model.parameters())
        self.optimizer = make_adam(self.params, c.lr, c.adam_eps)
        self.lr = c.lr

    # -- learning -------------------------------------------------------------------------
    def set_progress(self, step: int, total_steps: int) -> None:
        """Linear learning-rate annealing, when configured."""
        c = self.config
        self.lr = c.lr * (1.0 - min(1.0, step / max(1, total_steps))) if c.lr_schedule == "linear" else c.lr
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr

    def evaluate_batch(self, batch: TrajectoryBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One forward pass over a batch: log-probs, entropies and values ``[T, N]``, bootstrap values ``[N]``."""
        T, N = batch.rewards.shape
        obs = torch.cat([batch.obs.reshape((T * N,) + batch.obs.shape[2:]), batch.last_obs])
        out, v = self.model.action_value(obs)
        logp, ent = self.log_prob_entropy(out[: T * N], batch.actions.reshape((T * N,) + batch.actions.shape[2:]))
        return logp.view(T, N), ent.view(T, N), v[: T * N].view(T, N), v[T * N:]

    def targets(self, batch: TrajectoryBatch, logp: torch.Tensor, values: torch.Tensor,
                bootstrap: torch.Tensor) -> VTraceReturns:
        """V-trace targets for ``batch`` under the policy whose log-probs are ``logp``."""
        c = self.config
        return vtrace(
            logp.detach() - batch.behaviour_log_probs, batch.rewards, values.detach(), bootstrap.detach(),
            batch.terminated, batch.dones, c.gamma, c.vtrace_lambda, c.rho_clip, c.c_clip, c.pg_rho_clip,
        )

    def learn(self, batch: TrajectoryBatch) -> dict[str, float]:
        """One gradient step on the V-trace actor-critic loss."""
        c = self.config
        if not batch.valid.any():  # every row only reset an env (a tiny rollout): nothing to learn from
            return {}
        logp, ent, values, bootstrap = self.evaluate_batch(batch)
        vt = self.targets(batch, logp, values, bootstrap)
        mask = batch.valid.float()
        n = mask.sum().clamp(min=1.0)
        adv = vt.pg_advantages
        if c.normalize_advantage and n > 1:  # one valid row would normalise to 0 (PPO leaves one row as it is)
            real = adv[batch.valid]  # as PPO, APPO and A2C (Stable-Baselines3's): the sample std (n - 1), plus 1e-8
            adv = (adv - real.mean()) / (real.std() + 1e-8)
        pg_loss = -(adv * logp * mask).sum() / n
        v_loss = ((vt.vs - values).pow(2) * mask).sum() / n
        entropy = (ent * mask).sum() / n
        grad_norm = self.step(pg_loss + c.vf_coef * v_loss - c.ent_coef * entropy)
        stats = {"policy_loss": pg_loss.item(), "value_loss": v_loss.item(), "entropy": entropy.item(),
                 "grad_norm": grad_norm.item(),
                 "rho_clip_fraction": self.clip_fraction(logp, batch, mask), "learning_rate": self.lr}
        stats["explained_variance"] = explained_variance(vt.vs[mask.bool()], values.detach()[mask.bool()])
        return stats

    def step(self, loss: torch.Tensor) -> torch.Tensor:
        """One optimizer step on ``loss`` with global gradient-norm clipping; returns the gradients'
        global norm before clipping (a 0-dim tensor, not synchronised)."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(self.params, self.config.max_grad_norm, foreach=True)
        self.optimizer.step()
        self.updates += 1
        return norm

    def clip_fraction(self, logp: torch.Tensor, batch: TrajectoryBatch, mask: torch.Tensor) -> float:
        """Fraction of real transitions whose importance weight pi/mu exceeds ``rho_clip``.

        A tolerance of 1e-4 in log space ignores float noise (on-policy ratios are 1 up to rounding).
        """
        with torch.no_grad():
            clipped = (logp.detach() - batch.behaviour_log_probs > math.log(self.config.rho_clip) + 1e-4).float()
            return float((clipped * mask).sum() / mask.sum().clamp(min=1.0))

    # -- state ----------------------------------------------------------------------------
    def optimizers(self) -> dict[str, torch.optim.Optimizer]:  # noqa: D102
        return {"optimizer": self.optimizer}
