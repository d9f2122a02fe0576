"""Trust Region Policy Optimization (Schulman et al. 2015) and the Natural Policy Gradient (Kakade 2002).

Both solve ``F x = g`` by conjugate gradient, where ``g`` is the gradient of the surrogate
``mean(A * pi(a|s) / pi_old(a|s))`` and ``F v`` the Fisher-vector product (the Hessian of the
mean KL(pi_old || pi) at the old parameters, by double back-propagation, plus damping), and
step ``sqrt(2 delta / x^T F x) * x``, the step whose quadratic KL model equals ``delta``.
TRPO then backtracks (``theta_old + shrink^i * step``) until the measured mean KL is at most
``delta`` and the surrogate improved, and keeps the old policy if no step qualifies; NPG takes
the step as it is. The critic is updated separately afterwards: ``n_critic_updates`` epochs of
Adam minibatches on the squared error to the GAE returns (as in SB3-contrib's TRPO).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from torch import nn

from canter.algorithms.actor_critic import (
    ActorCriticAlgorithm, PolicyNetConfig, assign_flat, explained_variance, flat, linear_decay, set_lr,
)
from canter.algorithms.base import make_adam
from canter.config import MAX_PASSES, hp
from canter.data.batch import RolloutBatch
from canter.errors import CanterError
from canter.registry import register


def conjugate_gradient(
    avp: Callable[[torch.Tensor], torch.Tensor], b: torch.Tensor, max_iter: int, tol: float = 1e-10
) -> torch.Tensor:
    """Approximately solve ``A x = b`` for symmetric positive-definite ``A`` given only ``v -> A v``."""
    x = torch.zeros_like(b)
    r = b.clone()
    p = b.clone()
    rr = r.dot(r)
    for _ in range(max_iter):
        if rr <= tol:
            break
        ap = avp(p)
        alpha = rr / p.dot(ap)
        x += alpha * p
        r -= alpha * ap
        rr_new = r.dot(r)
        p = r + (rr_new / rr) * p
        rr = rr_new
    return x


def fisher_vector_product(
    kl: torch.Tensor, params: list[torch.Tensor], damping: float
) -> Callable[[torch.Tensor], torch.Tensor]:
    """``v -> (H + damping I) v`` with ``H`` the Hessian of ``kl`` (mean KL(pi_old || pi)) w.r.t. ``params``.

    At the old parameters that Hessian is the Fisher information matrix of the policy.
    """
    grad_kl = flat(torch.autograd.grad(kl, params, create_graph=True))

    def fvp(v: torch.Tensor) -> torch.Tensor:
        hv = torch.autograd.grad(grad_kl @ v, params, retain_graph=True)
        return flat(hv) + damping * v

    return fvp


def line_search(
    params: list[torch.Tensor], step: torch.Tensor, evaluate: Callable[[], tuple[float, float]],
    surrogate_before: float, max_kl: float, shrink: float, max_iter: int,
) -> tuple[bool, float]:
    """Backtracking line search: try ``theta_0 + shrink^i * step`` for ``i = 0, 1, ...``.

    ``evaluate()`` returns ``(surrogate, kl)`` at the current parameters. The first candidate
    whose KL is at most ``max_kl`` and whose surrogate is above ``surrogate_before`` is kept;
    if none is, the parameters are restored. Returns ``(accepted, step fraction used)``.
    """
    theta0 = flat([p.detach() for p in params]).clone()
    frac = 1.0
    for _ in range(max_iter):
        assign_flat(params, theta0 + frac * step)
        surrogate, kl = evaluate()
        if kl <= max_kl and surrogate > surrogate_before:
            return True, frac
        frac *= shrink
    assign_flat(params, theta0)
    return False, 0.0


@dataclass
class NPGConfig(PolicyNetConfig):
    """Natural policy gradient hyperparameters."""

    target_kl: float = hp(0.01, "step size: the mean KL(old || new) the quadratic model predicts for a step",
                          low=0, low_open=True, search={"low": 1e-3, "high": 0.1, "log": True})
    n_steps: int = hp(2048, "steps per env per rollout", low=1, search={"choices": [256, 512, 1024, 2048]})
    gamma: float = hp(0.99, "discount factor", low=0, high=1, search={"choices": [0.9, 0.95, 0.98, 0.99, 0.995]})
    gae_lambda: float = hp(0.95, "GAE lambda", low=0, high=1, search={"choices": [0.9, 0.95, 0.98, 1.0]})
    normalize_advantage: bool = hp(True, "normalise advantages over the rollout")
    cg_max_steps: int = hp(15, "conjugate-gradient iterations", low=1, high=MAX_PASSES)
    cg_damping: float = hp(0.1, "damping added to the Fisher-vector product", low=0)
    lr: float = hp(1e-3, "critic Adam learning rate", low=0, low_open=True, search={"low": 1e-4, "high": 3e-3, "log": True})
    lr_schedule: str = hp("constant", "critic learning-rate schedule: constant or linear (to 0)", choices=("constant", "linear"))
    adam_eps: float = hp(1e-5, "critic Adam epsilon", low=0, low_open=True)
    n_critic_updates: int = hp(10, "critic epochs per rollout", low=1, high=MAX_PASSES, search={"low": 1, "high": 30})
    batch_size: int = hp(128, "critic minibatch size", low=1, search={"choices": [64, 128, 256, 512]})


@dataclass
class TRPOConfig(NPGConfig):
    """TRPO hyperparameters."""

    target_kl: float = hp(0.01, "trust region: largest mean KL(old || new) the line search accepts",
                          low=0, low_open=True, search={"low": 1e-3, "high": 0.1, "log": True})
    line_search_shrinking_factor: float = hp(0.8, "step fraction multiplier per backtracking try", low=0, high=1,
                                             low_open=True)
    line_search_max_iter: int = hp(10, "backtracking tries before the step is rejected", low=1, high=MAX_PASSES)


@register("algorithm", "npg")
class NPG(ActorCriticAlgorithm):
    """Natural policy gradient: conjugate-gradient natural step of fixed KL size, separate critic."""

    name = "npg"
    Config = NPGConfig
    divergence_hint = "a lower target_kl (the policy's step size; lr is the critic's)"
    default_n_envs = 2
    line_search = False
    separate_networks = True

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: NPGConfig, **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        self.actor_params, self.critic_params = self._split_params()
        self.critic_optimizer = make_adam(self.critic_params, config.lr, config.adam_eps)
        self.lr = config.lr

    def _split_params(self) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
        """Policy parameters (those the action head and log_std depend on) and critic parameters."""
        params = list(self.model.parameters())
        space = self.observation_space
        obs = (torch.full((1,), int(space.start), device=self.device) if isinstance(space, gym.spaces.Discrete)
               else torch.zeros((1,) + space.shape, device=self.device))
        out = self.model.action(obs)
        extra = self.model.log_std.sum() if self.continuous else 0.0
        used = torch.autograd.grad(out.sum() + extra, params, allow_unused=True)
        actor = [p for p, g in zip(params, used) if g is not None]
        critic = [p for p, g in zip(params, used) if g is None]
        v_used = torch.autograd.grad(self.model.value(obs).sum(), actor, allow_unused=True)
        if any(g is not None for g in v_used):
            encoder = getattr(self.model, "encoder", None)
            if encoder is not None and any(True for _ in encoder.parameters()):
                raise CanterError(f"{self.name.upper()} needs separate actor and critic networks; on these "
                                  f"observations both read one learned encoder (a CNN for images): train ppo "
                                  f"or a2c here")
            raise CanterError(f"{self.name.upper()} needs separate actor and critic networks; "
                              "the model shares parameters between them")
        return actor, critic

    def set_progress(self, step: int, total_steps: int) -> None:
        """Critic learning-rate schedule."""
        self.lr = linear_decay(self.config.lr, self.config.lr_schedule, step, total_steps)
        set_lr(self.critic_optimizer, self.lr)

    def learn(self, batch: RolloutBatch) -> dict[str, float]:
        """One natural-gradient policy step on the whole rollout, then the critic epochs."""
        stats = self._policy_step(batch)
        stats.update(self._critic_epochs(batch))
        self.updates += 1
        return stats

    def _surrogate(self, obs: torch.Tensor, act: torch.Tensor, old_logp: torch.Tensor,
                   adv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.model.action(obs)
        logp, _ = self.log_prob_entropy(out, act)
        return (adv * torch.exp(logp - old_logp)).mean(), out

    def _policy_step(self, batch: RolloutBatch) -> dict[str, float]:
        c = self.config
        obs, act, old_logp, adv = batch.obs, batch.actions, batch.log_probs, batch.advantages
        if c.normalize_advantage and adv.shape[0] > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        old = self.snapshot(obs)
        surrogate, out = self._surrogate(obs, act, old_logp, adv)
        kl = self.kl(old, out).mean()
        params = self.actor_params
        g = flat(torch.autograd.grad(surrogate, params, retain_graph=True))
        fvp = fisher_vector_product(kl, params, c.cg_damping)
        x = conjugate_gradient(fvp, g, c.cg_max_steps)
        xfx = x.dot(fvp(x)).clamp(min=1e-12)
        step = (torch.sqrt(2 * c.target_kl / xfx) * x).detach()
        before = surrogate.item()
        if self.line_search:
            def evaluate() -> tuple[float, float]:
                with torch.no_grad():
                    new_surrogate, new_out = self._surrogate(obs, act, old_logp, adv)
                    return float(new_surrogate), float(self.kl(old, new_out).mean())

            accepted, frac = line_search(params, step, evaluate, before, c.target_kl,
                                         c.line_search_shrinking_factor, c.line_search_max_iter)
        else:
            assign_flat(params, flat([p.detach() for p in params]) + step)
            accepted, frac = True, 1.0
        with torch.no_grad():
            new_surrogate, new_out = self._surrogate(obs, act, old_logp, adv)
            new_kl = self.kl(old, new_out).mean()
            _, entropy = self.log_prob_entropy(new_out, act)
        return {
            "policy_objective": before, "policy_improvement": float(new_surrogate) - before,
            "kl": float(new_kl), "entropy": float(entropy.mean()), "step_accepted": float(accepted),
            "step_fraction": frac, "grad_norm": float(g.norm()),
        }

    def _critic_epochs(self, batch: RolloutBatch) -> dict[str, float]:
        c = self.config
        n = batch.obs.shape[0]
        bs = min(c.batch_size, n)
        losses = []
        for _ in range(c.n_critic_updates):
            perm = torch.randperm(n, generator=self.generator).to(batch.obs.device)
            for start in range(0, n, bs):
                idx = perm[start:start + bs]
                v_loss = (self.model.value(batch.obs[idx]) - batch.returns[idx]).pow(2).mean()
                self.critic_optimizer.zero_grad(set_to_none=True)
                v_loss.backward()
                self.critic_optimizer.step()
                losses.append(v_loss.detach())
        return {"value_loss": float(torch.stack(losses).mean()), "learning_rate": self.lr,
                "explained_variance": explained_variance(batch.returns, batch.values)}

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:  # noqa: D102
        return {"critic_optimizer": self.critic_optimizer}


@register("algorithm", "trpo")
class TRPO(NPG):
    """TRPO: natural-gradient step with a backtracking line search inside a KL trust region."""

    name = "trpo"
    Config = TRPOConfig
    line_search = True
