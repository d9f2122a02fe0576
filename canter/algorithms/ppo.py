"""Proximal Policy Optimization (clipped surrogate, GAE), discrete and diagonal-Gaussian actions.

Implementation details (as in SB3/CleanRL): advantages normalised per minibatch, optional
value clipping, entropy bonus, global gradient-norm clipping, linear LR and clip annealing,
approximate-KL early stopping, orthogonal init, Adam eps 1e-5. Truncated episodes bootstrap
from V(final observation) inside :func:`canter.data.compute_gae`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch

from canter.algorithms.actor_critic import ActorCriticAlgorithm, PolicyNetConfig, explained_variance
from canter.algorithms.base import ActOutput, encoder_hp
from canter.algorithms.policy_terms import signed_means
from canter.config import MAX_PASSES, hp
from canter.data.batch import RolloutBatch
from canter.optim import clip_grad_norm_, make_adam
from canter.registry import register
from canter.utils import RunningMeanStd


@dataclass
class PPOConfig(PolicyNetConfig):
    """PPO hyperparameters."""

    lr: float = hp(3e-4, "Adam learning rate", low=0, low_open=True, search={"low": 1e-5, "high": 3e-3, "log": True})
    lr_schedule: str = hp("constant", "learning-rate schedule: constant or linear (to 0)", choices=("constant", "linear"))
    n_steps: int = hp(2048, "steps per env per rollout", low=1, search={"choices": [32, 64, 128, 256, 512, 1024, 2048]})
    batch_size: int = hp(64, "minibatch size", low=1, search={"choices": [32, 64, 128, 256, 512]})
    n_epochs: int = hp(10, "passes over each rollout", low=1, high=MAX_PASSES, search={"low": 1, "high": 20})
    gamma: float = hp(0.99, "discount factor", low=0, high=1, search={"choices": [0.95, 0.98, 0.99, 0.995, 0.999]})
    gae_lambda: float = hp(0.95, "GAE lambda", low=0, high=1, search={"choices": [0.8, 0.9, 0.95, 0.98, 1.0]})
    clip_range: float = hp(0.2, "policy ratio clip range", low=0, low_open=True, search={"choices": [0.1, 0.2, 0.3]})
    clip_schedule: str = hp("constant", "clip-range schedule: constant or linear (to 0)", choices=("constant", "linear"))
    clip_range_vf: float | None = hp(None, "value clip range around the old value (null: no value clipping)", low=0, low_open=True)
    normalize_advantage: bool = hp(True, "normalise advantages per minibatch")
    normalize_value: bool = hp(False, "value normalisation (MAPPO's ValueNorm): the critic learns the returns "
                               "standardised by their running mean and std; its values are scaled back for GAE")
    ent_coef: float = hp(0.0, "entropy bonus coefficient", low=0, search={"low": 1e-8, "high": 0.1, "log": True})
    vf_coef: float = hp(0.5, "value loss coefficient", low=0, search={"low": 0.2, "high": 1.0})
    max_grad_norm: float = hp(0.5, "global gradient-norm clip", low=0, low_open=True, search={"choices": [0.3, 0.5, 1.0, 2.0]})
    target_kl: float | None = hp(None, "stop the epochs early when approx KL exceeds 1.5x this (null: never)", low=0, low_open=True)
    adam_eps: float = hp(1e-5, "Adam epsilon", low=0, low_open=True)
    shared_trunk: bool = hp(False, "share the hidden layers between actor and critic")
    encoder: str = encoder_hp()
    manual_backward: bool = hp(
        True, "hand-derived gradients when the model supports them (same math as autograd, ~2x faster); false: autograd"
    )


@register("algorithm", "ppo")
class PPO(ActorCriticAlgorithm):
    """PPO with a clipped surrogate objective over several epochs of minibatches."""

    name = "ppo"
    Config = PPOConfig

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: PPOConfig, **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        c = config
        params = list(self.model.parameters())
        self.optimizer = make_adam(params, c.lr, c.adam_eps)
        self.params = params
        self.lr = c.lr
        self.clip = c.clip_range
        self._stat_signs = np.array([-1.0, 1.0, 1.0, 1.0, 1.0], np.float32)  # policy loss = -mean(min(surr))
        #: the gradients' global norms before clipping (0-dim tensors) of the current update's minibatches
        self.grad_norms: list[torch.Tensor] = []
        #: running statistics of the returns (``normalize_value``): the critic's outputs are in their units
        self.value_rms = RunningMeanStd(()) if c.normalize_value else None

    # -- value normalisation ----------------------------------------------------------------
    def _value_scale(self) -> tuple[float, float]:
        """Mean and std of the returns seen so far (``normalize_value``)."""
        rms = self.value_rms
        return float(rms.mean), float(np.sqrt(rms.var + 1e-8))

    def _denormalized(self, out: ActOutput) -> ActOutput:
        """``out`` with the critic's standardised values scaled back to returns (``normalize_value``)."""
        if self.value_rms is None or out is None or out.values is None:
            return out
        mean, std = self._value_scale()
        return out._replace(values=out.values * std + mean)

    def act(self, obs: torch.Tensor, deterministic: bool = False) -> ActOutput:  # noqa: D102
        return self._denormalized(super().act(obs, deterministic))

    def act_numpy(self, obs: np.ndarray, deterministic: bool = False) -> ActOutput | None:  # noqa: D102
        return self._denormalized(super().act_numpy(obs, deterministic))

    def value(self, obs: torch.Tensor) -> torch.Tensor:  # noqa: D102
        v = super().value(obs)
        if self.value_rms is None:
            return v
        mean, std = self._value_scale()
        return v * std + mean

    def value_numpy(self, obs: np.ndarray) -> np.ndarray | None:  # noqa: D102
        v = super().value_numpy(obs)
        if self.value_rms is None or v is None:
            return v
        mean, std = self._value_scale()
        return v * std + mean

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
        raw = batch
        if self.value_rms is not None:  # the critic learns returns standardised by the updated statistics;
            # the old values go back to the critic's own outputs, standardised by the statistics they were
            # computed with (value clipping's window is centred there, as MAPPO's reference ValueNorm does)
            old_mean, old_std = self._value_scale()
            self.value_rms.update(batch.returns.cpu().numpy().astype(np.float64))
            mean, std = self._value_scale()
            batch = batch._replace(values=(batch.values - old_mean) / old_std, returns=(batch.returns - mean) / std)
        manual = self.uses_manual_backward
        self.grad_norms = []
        with torch.set_grad_enabled(not manual):  # the hand-derived path records no graph at all
            stats = self._epochs(batch, self._grads_deferred if manual else self._grads_autograd)
        self._np_mb = None  # let the rollout go
        names = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
        out = dict(zip(names, mean_rows(stats, self._stat_signs).tolist())) if stats else {}
        out.update(self._grad_norm_stat())
        out["explained_variance"] = explained_variance(raw.returns, raw.values)
        out["learning_rate"] = self.lr
        out["clip_range"] = self.clip
        return out

    def _epochs(self, batch: RolloutBatch, grads: Any) -> list[np.ndarray]:
        """The minibatch loop; ``grads(minibatch)`` fills ``.grad`` and returns a statistics row."""
        c = self.config
        n = batch.obs.shape[0]
        bs = min(c.batch_size, n)
        whole = self._normalized(batch) if bs >= n else None  # one minibatch: no shuffle, no gather
        stats: list[np.ndarray] = []
        for _ in range(c.n_epochs):
            perm = None if whole is not None else torch.randperm(n, generator=self.generator)
            perm = perm if perm is None else perm.to(batch.obs.device)  # the CPU generator's draw, on the batch's device
            for start in range(0, n, bs):
                mb = whole if perm is None else self._normalized(RolloutBatch(*(x[perm[start:start + bs]] for x in batch)))
                if not self._step(grads(mb), stats):
                    return stats
        return stats

    def _step(self, row: np.ndarray | PendingStats, stats: list[np.ndarray | PendingStats]) -> bool:
        """Log a minibatch's statistics ``row`` (policy_loss, value_loss, entropy, approx_kl,
        clip_fraction, or the arrays they are the means of; logged also when it stops the epochs, as
        SB3 does) and its gradients' global norm before clipping (to :attr:`grad_norms`), then clip
        the gradients and step, unless the approximate KL exceeds ``1.5 * target_kl``: then False
        (stop the epochs; that minibatch's norm is measured without clipping, so ``grad_norm``
        averages the same minibatches as the other statistics)."""
        stats.append(row)
        c = self.config
        if c.target_kl is not None and (row.approx_kl() if isinstance(row, PendingStats) else row[3]) > 1.5 * c.target_kl:
            self.grad_norms.append(clip_grad_norm_(self.optimizer, self.params, None))  # no step follows: no clip
            return False
        self.grad_norms.append(clip_grad_norm_(self.optimizer, self.params, c.max_grad_norm))
        self.optimizer.step()
        self.updates += 1
        return True

    def _grad_norm_stat(self) -> dict[str, float]:
        """``{"grad_norm": mean of grad_norms}`` (one reduction, one sync), or nothing when no minibatch ran."""
        norms = self.grad_norms
        if not norms:
            return {}
        return {"grad_norm": float(norms[0] if len(norms) == 1 else torch.stack(norms).mean())}

    def _normalized(self, mb: RolloutBatch) -> RolloutBatch:
        """The minibatch with advantages normalised (when configured)."""
        adv = mb.advantages
        if self.config.normalize_advantage and adv.shape[0] > 1:
            return mb._replace(advantages=(adv - adv.mean()) / (adv.std() + 1e-8))
        return mb

    def _grads_autograd(self, mb: RolloutBatch, outputs: tuple[torch.Tensor, torch.Tensor] | None = None) -> np.ndarray:
        """Loss, then ``backward()``; leaves gradients in ``.grad``; returns the statistics row.
        ``outputs``: the policy outputs and values of ``mb``'s rows when the caller computed them
        (a recurrent model runs whole sequences); else the model's forward pass on ``mb.obs``."""
        c = self.config
        out, v = self.model.action_value(mb.obs) if outputs is None else outputs
        logp, entropy = self.log_prob_entropy(out, mb.actions)
        log_ratio = logp - mb.log_probs
        ratio = log_ratio.exp()
        surr = mb.advantages * ratio
        surr_clip = mb.advantages * ratio.clamp(1.0 - self.clip, 1.0 + self.clip)
        pg_loss = -torch.min(surr, surr_clip).mean()
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
            approx_kl = ((ratio - 1.0) - log_ratio).mean()
            clip_frac = ((ratio - 1.0).abs() > self.clip).float().mean()
            return torch.stack([pg_loss, v_loss, ent, approx_kl, clip_frac]).cpu().numpy()

    def _grads_manual(self, mb: RolloutBatch, defer: bool = False) -> np.ndarray | PendingStats:
        """The same loss and gradients as :meth:`_grads_autograd`, derived by hand (call it under
        ``torch.no_grad()``: :meth:`learn` does).

        The network passes are torch's (batched products); the loss terms between them are
        NumPy, whose calls cost less than torch's on arrays this small. ``defer``: return the
        arrays the statistics row is the mean of (:class:`PendingStats`), so that :meth:`learn`
        reduces all minibatches' at once.
        """
        c = self.config
        n = mb.obs.shape[0]
        out, v, cache = self.model.forward_cached(mb.obs)
        actions, old_logp, old_v, ret, adv = self._numpy_fields(mb)
        terms = self.policy_terms(out, actions)
        log_ratio = terms.logp - old_logp
        ratio = np.exp(log_ratio)
        ratio_clip = np.minimum(np.maximum(ratio, 1.0 - self.clip), 1.0 + self.clip)  # np.clip's values, ~1 µs less
        surr, surr_clip = adv * ratio, adv * ratio_clip
        # d(policy loss)/d(logp) = -A*ratio/n where the unclipped term is the minimum, else 0 (clamp's gradient)
        g_logp = np.where(surr <= surr_clip, surr, 0.0)
        g_logp *= -1.0 / n
        diff = v - ret
        if c.clip_range_vf is None:
            v_err = diff * diff
            g_v = diff * (2.0 * c.vf_coef / n)
        else:
            delta = v - old_v
            diff_clip = old_v + np.clip(delta, -c.clip_range_vf, c.clip_range_vf) - ret
            l1, l2 = diff * diff, diff_clip * diff_clip
            v_err = np.maximum(l1, l2)
            g1, g2 = 2.0 * diff, 2.0 * diff_clip * (np.abs(delta) <= c.clip_range_vf)
            # torch.max's gradient: the larger term's, split evenly on ties
            g_v = np.where(l1 > l2, g1, np.where(l1 < l2, g2, 0.5 * (g1 + g2))) * (c.vf_coef / n)
        self.model.backward_cached(cache, terms.out_grad(g_logp, c.ent_coef), g_v)
        pending = PendingStats(surr, surr_clip, v_err, terms.entropy, ratio, log_ratio, ratio_clip)
        return pending if defer else pending.row(self._stat_signs)

    def _grads_deferred(self, mb: RolloutBatch) -> PendingStats:
        """:meth:`_grads_manual` with its statistics left to :meth:`learn`."""
        return self._grads_manual(mb, defer=True)

    def _numpy_fields(self, mb: RolloutBatch) -> tuple[np.ndarray, ...]:
        """NumPy views of ``mb``'s actions, old log-probs, old values, returns and advantages, made
        once per minibatch object (a rollout taken as one minibatch is the same object every epoch)."""
        if self.__dict__.get("_np_mb") is not mb:
            self._np_mb = mb
            self._np_fields = tuple(x.numpy() for x in (mb.actions, mb.log_probs, mb.values, mb.returns, mb.advantages))
        return self._np_fields

    # -- state ----------------------------------------------------------------------------
    def optimizers(self) -> dict[str, Any]:  # noqa: D102
        return {"optimizer": self.optimizer}

    def extra_state(self) -> dict[str, Any]:  # noqa: D102
        if self.value_rms is None:
            return {}
        rms = self.value_rms
        return {"value_rms": {"mean": float(rms.mean), "var": float(rms.var), "count": float(rms.count)}}

    def load_extra_state(self, state: dict[str, Any]) -> None:  # noqa: D102
        if self.value_rms is not None and state.get("value_rms"):
            self.value_rms.load_state_dict(state["value_rms"])

    def load_state_dict(self, state: dict[str, Any], weights_only: bool = False) -> None:
        """:meth:`Algorithm.load_state_dict`; ``weights_only`` restores the value normalisation statistics too: the
        critic outputs returns standardised by them (without them ``canter.load`` and ``init_from`` gave its
        standardised outputs as values)."""
        super().load_state_dict(state, weights_only=weights_only)
        if weights_only:
            self.load_extra_state({"value_rms": (state.get("extra") or {}).get("value_rms")})


_ONE = np.ones(1, np.float32)


class PendingStats(NamedTuple):
    """One minibatch's per-row terms, whose means (times ``signs``) make its statistics row:
    policy loss ``min(surr, surr_clip)``, value loss ``v_err``, ``entropy``, approximate KL
    ``ratio - 1 - log_ratio`` and clip fraction ``ratio_clip != ratio``. :func:`mean_rows`
    reduces many at once (one NumPy call per statistic over all minibatches, where a row each cost
    ~12 calls per minibatch)."""

    surr: np.ndarray
    surr_clip: np.ndarray
    v_err: np.ndarray
    entropy: np.ndarray
    ratio: np.ndarray
    log_ratio: np.ndarray
    ratio_clip: np.ndarray

    def approx_kl(self) -> float:
        """The minibatch's mean approximate KL (for ``target_kl``), rounded as :meth:`row` rounds it."""
        kl = self.ratio - self.log_ratio
        kl -= 1.0
        return float(signed_means((kl,), _ONE)[0])

    def row(self, signs: np.ndarray) -> np.ndarray:
        """The statistics row (float32 ``[5]``)."""
        kl = self.ratio - self.log_ratio
        kl -= 1.0
        return signed_means((np.minimum(self.surr, self.surr_clip), self.v_err, self.entropy, kl,
                             self.ratio_clip != self.ratio), signs)


def mean_rows(stats: list[np.ndarray | PendingStats], signs: np.ndarray) -> np.ndarray:
    """The mean over minibatches of their statistics rows (arrays ``[5]`` or :class:`PendingStats`):
    pending ones of equal size are stacked and reduced together."""
    pending = [s for s in stats if isinstance(s, PendingStats)]
    if len(pending) < 2 or len(pending) < len(stats) or len({len(p.surr) for p in pending}) > 1:
        return np.mean([s.row(signs) if isinstance(s, PendingStats) else s for s in stats], 0)
    stacked = PendingStats(*(np.stack(column) for column in zip(*pending)))  # [minibatches, rows] each
    kl = stacked.ratio - stacked.log_ratio
    kl -= 1.0
    terms = (np.minimum(stacked.surr, stacked.surr_clip), stacked.v_err, stacked.entropy, kl,
             stacked.ratio_clip != stacked.ratio)
    n = stacked.surr.shape[1]
    rows = np.stack([np.add.reduce(x, axis=1, dtype=np.float32) for x in terms], 1) * (signs / n)
    return np.mean(rows, 0)
