"""APPO: asynchronous PPO, i.e. IMPALA's architecture with PPO's clipped surrogate.

Each batch of explorer trajectories is evaluated once under the network as it is when the batch
arrives (pi_old): V-trace gives value targets ``v_s`` and advantages ``A_s`` that already carry the
truncated importance weight ``min(pg_rho_clip, pi_old/mu)`` towards the behaviour policy mu. Then,
as in PPO, several epochs of minibatches maximise ``min(r A, clip(r, 1-eps, 1+eps) A)`` with
``r = pi/pi_old``, plus the value loss towards ``v_s`` and an entropy bonus. This matches RLlib's
APPO with its target network synchronised before every update (RLlib: ``is_ratio * pi/mu``
with ``is_ratio = mu/pi_old`` clipped to [0, 2], which is ``pi/pi_old`` inside that range).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from canter.algorithms.actor_critic import explained_variance
from canter.algorithms.impala import IMPALA, IMPALAConfig
from canter.config import MAX_PASSES, hp
from canter.data.batch import TrajectoryBatch
from canter.registry import register


@dataclass
class APPOConfig(IMPALAConfig):
    """APPO hyperparameters: IMPALA's plus PPO's epochs, minibatches and clip range."""

    n_epochs: int = hp(2, "passes over each batch (few: async batches are stale)", low=1, high=MAX_PASSES,
                       search={"low": 1, "high": 20})
    batch_size: int = hp(256, "minibatch size (rows of the flattened batch)", low=1,
                         search={"choices": [64, 128, 256, 512]})
    clip_range: float = hp(0.2, "policy ratio clip range", low=0, low_open=True, search={"choices": [0.1, 0.2, 0.3]})
    normalize_advantage: bool = hp(True, "normalise advantages per minibatch")
    ent_coef: float = hp(0.0, "entropy bonus coefficient", low=0, search={"low": 1e-8, "high": 0.1, "log": True})
    max_grad_norm: float = hp(0.5, "global gradient-norm clip", low=0, low_open=True)


@register("algorithm", "appo")
class APPO(IMPALA):
    """APPO: asynchronous PPO (clipped surrogate over V-trace advantages)."""

    name = "appo"
    Config = APPOConfig

    def learn(self, batch: TrajectoryBatch) -> dict[str, float]:
        """Epochs of clipped-surrogate minibatch updates on one batch of trajectories."""
        c = self.config
        with torch.no_grad():
            old_logp, _, old_values, bootstrap = self.evaluate_batch(batch)
            vt = self.targets(batch, old_logp, old_values, bootstrap)
            mask = batch.valid.reshape(-1)
            T, N = batch.rewards.shape
            obs = batch.obs.reshape((T * N,) + batch.obs.shape[2:])[mask]
            actions = batch.actions.reshape((T * N,) + batch.actions.shape[2:])[mask]
            rho_clipped = self.clip_fraction(old_logp, batch, batch.valid.float())
            old_logp, adv, vs = old_logp.reshape(-1)[mask], vt.pg_advantages.reshape(-1)[mask], vt.vs.reshape(-1)[mask]
        n = obs.shape[0]
        if n == 0:  # every row only reset an env (a tiny rollout): nothing to learn from
            return {}
        bs = min(c.batch_size, n)
        stats: list[torch.Tensor] = []
        for _ in range(c.n_epochs):
            perm = torch.randperm(n, generator=self.generator).to(obs.device)
            for start in range(0, n, bs):
                idx = perm[start:start + bs]
                mb_adv = adv[idx]
                if c.normalize_advantage and idx.numel() > 1:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                out, v = self.model.action_value(obs[idx])
                logp, ent = self.log_prob_entropy(out, actions[idx])
                log_ratio = logp - old_logp[idx]
                ratio = log_ratio.exp()
                pg_loss = -torch.min(mb_adv * ratio, mb_adv * ratio.clamp(1 - c.clip_range, 1 + c.clip_range)).mean()
                v_loss = (v - vs[idx]).pow(2).mean()
                entropy = ent.mean()
                grad_norm = self.step(pg_loss + c.vf_coef * v_loss - c.ent_coef * entropy)
                with torch.no_grad():
                    approx_kl = ((ratio - 1.0) - log_ratio).mean()
                    clip_frac = ((ratio - 1.0).abs() > c.clip_range).float().mean()
                stats.append(torch.stack([pg_loss.detach(), v_loss.detach(), entropy.detach(), approx_kl, clip_frac,
                                          grad_norm.to(clip_frac.dtype)]))
        names = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "grad_norm")
        out_stats = dict(zip(names, torch.stack(stats).mean(0).tolist())) if stats else {}
        out_stats.update(rho_clip_fraction=rho_clipped, learning_rate=self.lr,
                         explained_variance=explained_variance(vs, old_values.reshape(-1)[mask]))
        return out_stats
