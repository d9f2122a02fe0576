"""Proximal Policy Optimization (clipped surrogate, GAE), discrete and diagonal-Gaussian actions.

Implementation details (as in SB3/CleanRL): advantages normalised per minibatch, optional
value clipping, entropy bonus, global gradient-norm clipping, linear LR and clip annealing,
approximate-KL early stopping, orthogonal init, Adam eps 1e-5. Truncated episodes bootstrap
from V(final observation) inside :func:`canter.data.compute_gae`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from torch import nn

from canter.algorithms.base import ActOutput, Algorithm, encoder_kwargs, sample_actor_critic
from canter.config import hp
from canter.data.batch import RolloutBatch
from canter.errors import CanterError
from canter.models import distributions as D
from canter.optim import clip_grad_norm_, make_adam
from canter.registry import register


@dataclass
class PPOConfig:
    """PPO hyperparameters."""

    lr: float = hp(3e-4, "Adam learning rate", low=0, low_open=True, search={"low": 1e-5, "high": 3e-3, "log": True})
    lr_schedule: str = hp("constant", "learning-rate schedule: constant or linear (to 0)", choices=("constant", "linear"))
    n_steps: int = hp(2048, "steps per env per rollout", low=1, search={"choices": [32, 64, 128, 256, 512, 1024, 2048]})
    batch_size: int = hp(64, "minibatch size", low=1, search={"choices": [32, 64, 128, 256, 512]})
    n_epochs: int = hp(10, "passes over each rollout", low=1, search={"low": 1, "high": 20})
    gamma: float = hp(0.99, "discount factor", low=0, high=1, search={"choices": [0.95, 0.98, 0.99, 0.995, 0.999]})
    gae_lambda: float = hp(0.95, "GAE lambda", low=0, high=1, search={"choices": [0.8, 0.9, 0.95, 0.98, 1.0]})
    clip_range: float = hp(0.2, "policy ratio clip range", low=0, low_open=True, search={"choices": [0.1, 0.2, 0.3]})
    clip_schedule: str = hp("constant", "clip-range schedule: constant or linear (to 0)", choices=("constant", "linear"))
    clip_range_vf: float | None = hp(None, "value clip range around the old value (null: no value clipping)", low=0, low_open=True)
    normalize_advantage: bool = hp(True, "normalise advantages per minibatch")
    ent_coef: float = hp(0.0, "entropy bonus coefficient", low=0, search={"low": 1e-8, "high": 0.1, "log": True})
    vf_coef: float = hp(0.5, "value loss coefficient", low=0, search={"low": 0.2, "high": 1.0})
    max_grad_norm: float = hp(0.5, "global gradient-norm clip", low=0, low_open=True, search={"choices": [0.3, 0.5, 1.0, 2.0]})
    target_kl: float | None = hp(None, "stop the epochs early when approx KL exceeds 1.5x this (null: never)", low=0, low_open=True)
    adam_eps: float = hp(1e-5, "Adam epsilon", low=0, low_open=True)
    normalize_obs: bool = hp(False, "normalise observations with running mean/std")
    normalize_reward: bool = hp(False, "scale rewards by the running std of the discounted return")
    net_arch: list[int] = hp([64, 64], "hidden layer sizes of actor and critic", low=1)
    activation: str = hp("tanh", "hidden activation", choices=("tanh", "relu", "elu", "gelu", "silu"))
    ortho_init: bool = hp(True, "orthogonal initialisation (gain sqrt 2, 0.01 policy head, 1 value head)")
    log_std_init: float = hp(0.0, "initial log std of the Gaussian policy (Box actions)")
    shared_trunk: bool = hp(False, "share the hidden layers between actor and critic")
    encoder: str = hp("auto", "observation encoder: auto (nature CNN for uint8 images, flat otherwise), nature, impala, "
                      "flat, or module:Class")
    manual_backward: bool = hp(
        True, "hand-derived gradients when the model supports them (same math as autograd, ~2x faster); false: autograd"
    )

    def validate(self) -> None:
        """Cross-field checks."""
        if not self.net_arch:
            raise CanterError("'hparams.net_arch' needs at least one hidden layer")


@register("algorithm", "ppo")
class PPO(Algorithm):
    """PPO with a clipped surrogate objective over several epochs of minibatches."""

    name = "ppo"
    family = "on_policy"
    Config = PPOConfig
    default_model = "mlp_actor_critic"
    default_n_envs = 8

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: PPOConfig, **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        c = config
        self.model = self.make_model(
            net_arch=c.net_arch, activation=c.activation, ortho_init=c.ortho_init,
            log_std_init=c.log_std_init, shared_trunk=c.shared_trunk, **encoder_kwargs(c),
        )
        self.continuous = isinstance(action_space, gym.spaces.Box)
        params = list(self.model.parameters())
        self.optimizer = make_adam(params, c.lr, c.adam_eps)
        self.params = params
        self.lr = c.lr
        self.clip = c.clip_range
        self._stat_signs = torch.tensor([-1.0, 1.0, 1.0, 1.0, 1.0])  # policy loss = -mean(min(surr))
        self._action_ids = None if self.continuous else torch.arange(int(action_space.n))

    # -- acting ---------------------------------------------------------------------------
    def _dist(self, out: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.continuous:
            log_std = self.model.log_std
            return D.gaussian_log_prob(out, log_std, actions), D.gaussian_entropy(log_std, out.shape[0])
        logp, logp_all = D.categorical_log_prob(out, actions)
        return logp, D.categorical_entropy(logp_all)

    def act(self, obs: torch.Tensor, deterministic: bool = False) -> ActOutput:
        """Sample (or take the mode of) the policy; also returns log-probs and values."""
        return sample_actor_critic(self, obs, deterministic)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """V(obs) for bootstrapping."""
        return self.model.value(obs)

    # -- learning -------------------------------------------------------------------------
    def set_progress(self, step: int, total_steps: int) -> None:
        """Linear annealing of the learning rate and clip range, when configured."""
        frac = min(1.0, step / max(1, total_steps))
        c = self.config
        self.lr = c.lr * (1.0 - frac) if c.lr_schedule == "linear" else c.lr
        self.clip = c.clip_range * (1.0 - frac) if c.clip_schedule == "linear" else c.clip_range
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr

    def learn(self, batch: RolloutBatch) -> dict[str, float]:
        """Epochs of clipped-surrogate minibatch updates over one rollout."""
        c = self.config
        manual = c.manual_backward and getattr(self.model, "manual_backward", False)
        with torch.set_grad_enabled(not manual):  # the hand-derived path records no graph at all
            stats = self._epochs(batch, self._grads_manual if manual else self._grads_autograd)
        names = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
        out = dict(zip(names, torch.stack(stats).mean(0).tolist())) if stats else {}
        var_ret = batch.returns.var()
        out["explained_variance"] = float(1 - (batch.returns - batch.values).var() / var_ret) if var_ret > 0 else 0.0
        out["learning_rate"] = self.lr
        out["clip_range"] = self.clip
        return out

    def _epochs(self, batch: RolloutBatch, grads: Any) -> list[torch.Tensor]:
        """The minibatch loop; ``grads(minibatch)`` fills ``.grad`` and returns a statistics row."""
        c = self.config
        n = batch.obs.shape[0]
        bs = min(c.batch_size, n)
        whole = self._normalized(batch) if bs >= n else None  # one minibatch: no shuffle, no gather
        stats: list[torch.Tensor] = []
        for _ in range(c.n_epochs):
            perm = None if whole is not None else torch.randperm(n, generator=self.generator)
            for start in range(0, n, bs):
                mb = whole if perm is None else self._normalized(RolloutBatch(*(x[perm[start:start + bs]] for x in batch)))
                row = grads(mb)  # policy_loss, value_loss, entropy, approx_kl, clip_fraction
                if c.target_kl is not None and row[3].item() > 1.5 * c.target_kl:
                    return stats
                clip_grad_norm_(self.optimizer, self.params, c.max_grad_norm)
                self.optimizer.step()
                self.updates += 1
                stats.append(row)
        return stats

    def _normalized(self, mb: RolloutBatch) -> RolloutBatch:
        """The minibatch with advantages normalised (when configured)."""
        adv = mb.advantages
        if self.config.normalize_advantage and adv.shape[0] > 1:
            return mb._replace(advantages=(adv - adv.mean()) / (adv.std() + 1e-8))
        return mb

    def _surrogate(self, logp: torch.Tensor, mb: RolloutBatch) -> tuple[torch.Tensor, ...]:
        """Clipped surrogate pieces: loss, unclipped term, clipped term, ratio, log-ratio."""
        log_ratio = logp - mb.log_probs
        ratio = log_ratio.exp()
        surr = mb.advantages * ratio
        surr_clip = mb.advantages * ratio.clamp(1.0 - self.clip, 1.0 + self.clip)
        return -torch.min(surr, surr_clip).mean(), surr, surr_clip, ratio, log_ratio

    def _stats(self, pg: torch.Tensor, vl: torch.Tensor, ent: torch.Tensor, ratio: torch.Tensor,
               log_ratio: torch.Tensor) -> torch.Tensor:
        approx_kl = ((ratio - 1.0) - log_ratio).mean()
        clip_frac = ((ratio - 1.0).abs() > self.clip).float().mean()
        return torch.stack([pg, vl, ent, approx_kl, clip_frac])

    def _grads_autograd(self, mb: RolloutBatch) -> torch.Tensor:
        """Loss, then ``backward()``; leaves gradients in ``.grad``; returns the statistics row."""
        c = self.config
        out, v = self.model.action_value(mb.obs)
        logp, entropy = self._dist(out, mb.actions)
        pg_loss, _, _, ratio, log_ratio = self._surrogate(logp, mb)
        if c.clip_range_vf is not None:
            v_clip = mb.values + (v - mb.values).clamp(-c.clip_range_vf, c.clip_range_vf)
            v_loss = torch.max((v - mb.returns).pow(2), (v_clip - mb.returns).pow(2)).mean()
        else:
            v_loss = (v - mb.returns).pow(2).mean()
        ent = entropy.mean()
        loss = pg_loss - c.ent_coef * ent + c.vf_coef * v_loss
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        with torch.no_grad():
            return self._stats(pg_loss.detach(), v_loss.detach(), ent.detach(), ratio.detach(), log_ratio.detach())

    def _grads_manual(self, mb: RolloutBatch) -> torch.Tensor:
        """The same loss and gradients as :meth:`_grads_autograd`, derived by hand (call it under
        ``torch.no_grad()``: :meth:`learn` does).

        Written for few kernels: each small op costs microseconds regardless of its size.
        """
        c = self.config
        n = mb.obs.shape[0]
        out, v, cache = self.model.forward_cached(mb.obs)
        if self.continuous:
            log_std = self.model.log_std
            inv_std = torch.exp(-log_std)
            z = (mb.actions - out) * inv_std
            logp = (-0.5 * z * z - log_std).sum(-1) - D.LOG_SQRT_2PI * z.shape[-1]
            ent_rows = D.gaussian_entropy(log_std, n)
        else:
            onehot = (mb.actions.unsqueeze(-1) == self._action_ids).to(out.dtype)
            logp_all = torch.log_softmax(out, -1)
            probs = logp_all.exp()
            logp = (logp_all * onehot).sum(-1)
            ent_rows = (probs * logp_all).sum(-1).neg_()
        log_ratio = logp - mb.log_probs
        ratio = log_ratio.exp()
        ratio_clip = ratio.clamp(1.0 - self.clip, 1.0 + self.clip)
        surr, surr_clip = mb.advantages * ratio, mb.advantages * ratio_clip
        # d(policy loss)/d(logp) = -A*ratio/n where the unclipped term is the minimum, else 0 (clamp's gradient)
        g_logp = torch.where(surr <= surr_clip, surr, 0.0).mul_(-1.0 / n)
        diff = v - mb.returns
        if c.clip_range_vf is None:
            v_err = diff * diff
            g_v = diff * (2.0 * c.vf_coef / n)
        else:
            delta = v - mb.values
            inside = (delta >= -c.clip_range_vf) & (delta <= c.clip_range_vf)
            diff_clip = mb.values + delta.clamp(-c.clip_range_vf, c.clip_range_vf) - mb.returns
            l1, l2 = diff.pow(2), diff_clip.pow(2)
            v_err = torch.max(l1, l2)
            g1, g2 = 2 * diff, 2 * diff_clip * inside
            g_v = torch.where(l1 > l2, g1, torch.where(l1 < l2, g2, 0.5 * (g1 + g2))) * (c.vf_coef / n)
        if self.continuous:
            g_out = (g_logp.unsqueeze(-1) * z) * inv_std
            g_log_std = (g_logp.unsqueeze(-1) * (z * z - 1.0)).sum(0) - c.ent_coef
            if self.model.log_std.grad is None:
                self.model.log_std.grad = g_log_std
            else:
                self.model.log_std.grad.copy_(g_log_std)
        else:
            g_out = (onehot - probs) * g_logp.unsqueeze(-1)
            if c.ent_coef:  # d(-ent_coef * mean H)/d(logits) = ent_coef/n * p * (log p + H)
                g_out += probs * (logp_all + ent_rows.unsqueeze(-1)) * (c.ent_coef / n)
        self.model.backward_cached(cache, g_out, g_v)
        kl = (ratio - log_ratio).sub_(1.0)
        rows = torch.stack([torch.min(surr, surr_clip), v_err, ent_rows, kl, (ratio_clip != ratio).to(kl.dtype)])
        return rows.mean(1) * self._stat_signs

    # -- state ----------------------------------------------------------------------------
    def modules(self) -> dict[str, nn.Module]:  # noqa: D102
        return {"model": self.model}

    def optimizers(self) -> dict[str, Any]:  # noqa: D102
        return {"optimizer": self.optimizer}
