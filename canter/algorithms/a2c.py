"""Advantage Actor-Critic (A2C): synchronous n-step advantage actor-critic, one update per rollout.

Implementation details as in Stable-Baselines3's A2C (Mnih et al. 2016, synchronous variant):
n-step returns by default (``gae_lambda=1``; GAE with ``gae_lambda<1``), one gradient step per
rollout on the whole rollout, PyTorch RMSprop (alpha 0.99, eps 1e-5) or Adam, value loss without
a 1/2 factor, global gradient-norm clipping, optional advantage normalisation over the rollout,
orthogonal init and separate 64-64 tanh actor and critic. Truncated episodes bootstrap from
V(final observation) inside :func:`canter.data.compute_gae`. The loss follows PPO's structure,
so A2C is PPO with one epoch, one minibatch and no clipping.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from canter.algorithms.actor_critic import (
    ActorCriticAlgorithm, PolicyNetConfig, linear_decay, make_optimizer, set_lr,
)
from canter.algorithms.policy_terms import signed_means
from canter.config import hp
from canter.data.batch import RolloutBatch
from canter.optim import clip_grad_norm_
from canter.registry import register


@dataclass
class A2CConfig(PolicyNetConfig):
    """A2C hyperparameters."""

    lr: float = hp(7e-4, "learning rate", low=0, low_open=True, search={"low": 1e-5, "high": 3e-3, "log": True})
    lr_schedule: str = hp("constant", "learning-rate schedule: constant or linear (to 0)", choices=("constant", "linear"))
    optimizer: str = hp("rmsprop", "optimizer: rmsprop (as in the A2C paper and SB3) or adam", choices=("rmsprop", "adam"))
    optimizer_eps: float = hp(1e-5, "epsilon of RMSprop / Adam", low=0, low_open=True)
    rms_alpha: float = hp(0.99, "RMSprop smoothing constant", low=0, high=1)
    n_steps: int = hp(5, "steps per env per rollout (the n of the n-step return)", low=1, search={"choices": [5, 8, 16, 32, 64]})
    gamma: float = hp(0.99, "discount factor", low=0, high=1, search={"choices": [0.95, 0.98, 0.99, 0.995]})
    gae_lambda: float = hp(1.0, "GAE lambda (1: plain n-step returns)", low=0, high=1, search={"choices": [0.9, 0.95, 1.0]})
    normalize_advantage: bool = hp(False, "normalise advantages over the rollout")
    ent_coef: float = hp(0.0, "entropy bonus coefficient", low=0, search={"low": 1e-8, "high": 0.1, "log": True})
    vf_coef: float = hp(0.5, "value loss coefficient", low=0, search={"low": 0.2, "high": 1.0})
    max_grad_norm: float = hp(0.5, "global gradient-norm clip", low=0, low_open=True)
    shared_trunk: bool = hp(False, "share the hidden layers between actor and critic")
    manual_backward: bool = hp(
        True, "hand-derived gradients when the model supports them (same math as autograd, faster); false: autograd"
    )


@register("algorithm", "a2c")
class A2C(ActorCriticAlgorithm):
    """A2C: n-step advantage actor-critic, one RMSprop (or Adam) step per rollout."""

    name = "a2c"
    Config = A2CConfig
    default_n_envs = 8

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: A2CConfig, **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        c = config
        self.params = list(self.model.parameters())
        self.optimizer = make_optimizer(self.params, c.optimizer, c.lr, c.optimizer_eps, c.rms_alpha)
        self.lr = c.lr
        self._stat_signs = np.array([-1.0, 1.0, 1.0], np.float32)  # policy loss = -mean(A * logp)

    def set_progress(self, step: int, total_steps: int) -> None:
        """Linear learning-rate decay, when configured."""
        self.lr = linear_decay(self.config.lr, self.config.lr_schedule, step, total_steps)
        set_lr(self.optimizer, self.lr)

    def learn(self, batch: RolloutBatch) -> dict[str, float]:
        """One gradient step on the whole rollout."""
        c = self.config
        obs, act, _old_logp, old_v, adv, ret = batch
        manual = self.uses_manual_backward
        with torch.set_grad_enabled(not manual):  # the hand-derived path records no graph at all
            if c.normalize_advantage and adv.shape[0] > 1:
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            stats = (self._grads_manual if manual else self._grads_autograd)(obs, act, adv, ret)
            grad_norm = clip_grad_norm_(self.optimizer, self.params, c.max_grad_norm)
            self.optimizer.step()
        self.updates += 1
        # one sync for the rest: gradient norm, Var(R - V_old) and Var(R) (population variances: only their
        # ratio is used, and a one-row rollout needs no warning)
        variances = torch.stack([ret - old_v, ret]).var(1, correction=0)
        values = stats.tolist() + torch.cat([grad_norm.view(1), variances]).tolist()
        out = dict(zip(("policy_loss", "value_loss", "entropy", "grad_norm"), values[:4]))
        out["explained_variance"] = 1.0 - values[4] / values[5] if values[5] > 0 else 0.0  # 0 when R is constant
        out["learning_rate"] = self.lr
        return out

    def _grads_autograd(self, obs: torch.Tensor, act: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor) -> np.ndarray:
        """Loss, then ``backward()``; leaves gradients in ``.grad``; returns policy loss, value loss, entropy."""
        c = self.config
        out, v = self.model.action_value(obs)
        logp, entropy = self.log_prob_entropy(out, act)
        pg_loss = -(adv * logp).mean()
        v_loss = (v - ret).pow(2).mean()
        ent = entropy.mean()
        loss = pg_loss - c.ent_coef * ent + c.vf_coef * v_loss
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        return torch.stack([pg_loss.detach(), v_loss.detach(), ent.detach()]).cpu().numpy()

    def _grads_manual(self, obs: torch.Tensor, act: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor) -> np.ndarray:
        """The same loss and gradients as :meth:`_grads_autograd`, derived by hand (under ``no_grad``).

        d(loss)/d(logp) = -A/n, d(loss)/dV = 2 vf_coef (V - R)/n; the stacked model backpropagates
        both heads at once and overwrites every ``.grad`` (no zeroing needed).
        """
        c = self.config
        n = obs.shape[0]
        out, v, cache = self.model.forward_cached(obs)
        terms = self.policy_terms(out, act.numpy())
        adv_np = adv.numpy()
        diff = v - ret.numpy()
        self.model.backward_cached(cache, terms.out_grad(adv_np * (-1.0 / n), c.ent_coef), diff * (2.0 * c.vf_coef / n))
        return signed_means((adv_np * terms.logp, diff * diff, terms.entropy), self._stat_signs)

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:  # noqa: D102
        return {"optimizer": self.optimizer}
