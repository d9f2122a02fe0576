"""Proportional prioritized experience replay (Schaul et al., 2016) on a sum tree.

A transition ``i`` is drawn with probability ``P(i) = p_i^alpha / sum_k p_k^alpha`` (stratified:
one draw from each of ``batch_size`` equal slices of the total), and its loss is scaled by the
importance weight ``w_i = (N * P(i))^-beta / max_k w_k``, where ``N`` is the number of stored
transitions and the maximum runs over the whole buffer (through a min tree of priorities).
``beta`` anneals linearly from ``beta0`` to 1 over training. New transitions get the largest
priority seen so far; :meth:`update_priorities` sets ``p_i = |td_i| + eps`` after each update.
"""
from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from canter.data.batch import ReplayBatch
from canter.data.replay import ReplayBuffer, check_batch_size
from canter.data.sumtree import MinTree, SumTree

log = logging.getLogger("canter")


def warn_non_finite(owner: Any, finite: np.ndarray) -> None:
    """Warn, the first time for ``owner`` (a buffer, or Ape-X's sharded one for all its shards), that the TD errors
    where ``finite`` is False keep their transitions' previous priorities."""
    if not getattr(owner, "_warned_non_finite", False):
        log.warning("prioritized replay: non-finite TD errors (NaN or inf) for %d of %d sampled transitions; they "
                    "keep their previous priorities", int((~finite).sum()), len(finite))
        owner._warned_non_finite = True


class PrioritizedReplayBuffer(ReplayBuffer):
    """:class:`ReplayBuffer` with proportional prioritized sampling and importance weights."""

    def __init__(self, *args: Any, alpha: float = 0.6, beta0: float = 0.4, eps: float = 1e-6, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.alpha, self.beta0, self.eps = alpha, beta0, eps
        self.beta = beta0
        self.max_priority = 1.0
        self._warned_non_finite = False
        slots = self.length * self.n_envs
        self.sums = SumTree(slots)
        self.mins = MinTree(slots)

    def set_progress(self, step: int, total_steps: int) -> None:
        """Anneal ``beta`` linearly from ``beta0`` (step 0) to 1 (``total_steps``)."""
        self.beta = self.beta0 + (1.0 - self.beta0) * min(1.0, step / max(1, total_steps))

    def _row_slots(self, row: int) -> np.ndarray:
        return row * self.n_envs + np.arange(self.n_envs)

    def _written(self, row: int) -> None:
        slots = self._row_slots(row)
        valid = self.valid[row]
        p = self.max_priority ** self.alpha
        self.sums.update(slots, np.where(valid, p, 0.0))
        self.mins.update(slots, np.where(valid, p, np.inf))

    def _cleared(self, row: int) -> None:
        slots = self._row_slots(row)
        self.sums.update(slots, 0.0)
        self.mins.update(slots, np.inf)

    def sample_indices(self, batch_size: int) -> np.ndarray:
        """Flat indices drawn proportionally to priority (one per stratum of the total)."""
        total = self.sums.total
        if self.count == 0 or total <= 0:
            return super().sample_indices(batch_size)
        prefix = (np.arange(batch_size) + self.rng.random(batch_size)) * (total / batch_size)
        idx = self.sums.find(np.minimum(prefix, np.nextafter(total, 0.0)))
        bad = (idx >= self.sums.capacity) | ~self._valid[np.minimum(idx, self.sums.capacity - 1)]
        if bad.any():  # rounding at the top of the range: redraw those uniformly among valid slots
            idx[bad] = super().sample_indices(int(bad.sum()))
        return idx

    def sample(self, batch_size: int) -> ReplayBatch:
        """Draw ``batch_size`` transitions by priority, with normalised importance weights."""
        check_batch_size(batch_size)
        idx = self.sample_indices(batch_size)
        total = self.sums.total
        probs = self.sums.leaves[idx] / total
        min_prob = self.mins.min / total
        # w_i / max_k w_k = (P(i) / P_min)^-beta; N cancels out
        weights = (probs / min_prob) ** (-self.beta)
        return self.transitions(idx, weights)

    def update_priorities(self, indices: torch.Tensor | np.ndarray, td: torch.Tensor | np.ndarray) -> None:
        """Set the priorities of sampled transitions from their new absolute TD errors.

        Call it before adding more transitions: a slot that has since been overwritten with a new
        valid transition would get the old one's priority (the trainers, Ape-X's shards included,
        update right after each gradient step). Slots that have since become invalid are skipped, and so
        are non-finite errors (a diverged update, e.g. with ``divergence_guard: off``; a warning says so
        once): the sum tree never holds NaN or inf, which would break every later draw. An index that
        appears more than once keeps its last error's priority (as Tianshou's ``update_weight``), while
        :attr:`max_priority`, which new transitions get, takes the largest of them all.
        """
        idx = np.asarray(indices.cpu().numpy() if isinstance(indices, torch.Tensor) else indices, dtype=np.int64)
        err = np.asarray(td.detach().cpu().numpy() if isinstance(td, torch.Tensor) else td, dtype=np.float64)
        p = np.abs(err) + self.eps
        keep = self._valid[idx]  # slots no longer holding a sampleable transition
        finite = np.isfinite(p)
        if not finite.all():  # one NaN or inf in the sum tree made every draw slot 0 with NaN weights, for good
            warn_non_finite(self, finite)
            keep &= finite
        if not keep.all():
            idx, p = idx[keep], p[keep]
        if len(idx) == 0:
            return
        self.max_priority = max(self.max_priority, float(p.max()))
        pa = p ** self.alpha
        self.sums.update(idx, pa)
        self.mins.update(idx, pa)

    def state_dict(self) -> dict[str, Any]:  # noqa: D102
        state = super().state_dict()
        state.update(priorities=self.sums.leaves.copy(), max_priority=self.max_priority, beta=self.beta)
        return state

    def _check_own_state(self, state: dict[str, Any]) -> None:
        """The priorities (where saved) fit this buffer and ``max_priority`` and ``beta`` are numbers (checked before
        the arrays are replaced: either was a ValueError traceback after the buffer's contents were)."""
        super()._check_own_state(state)
        for key in ("max_priority", "beta"):
            if key in state and (isinstance(state[key], bool) or not isinstance(state[key], (int, float, np.number))):
                raise ValueError(f"{key} is {state[key]!r}, not a number")
        if "priorities" in state and np.shape(state["priorities"]) != self.sums.leaves.shape:
            raise ValueError(f"priorities has shape {np.shape(state['priorities'])}, this buffer's "
                             f"{self.sums.leaves.shape}")

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`; a uniform buffer's state (no priorities: ``ReplayBuffer.save``'s file)
        gives every stored transition the priority a new one gets, the largest so far (1 for it)."""
        super().load_state_dict(state)
        self.max_priority = float(state.get("max_priority", 1.0))
        # NaN or inf: saved before non-finite TD errors were skipped; 0 or below (no TD error gives one:
        # priorities are |error| + eps) gave new transitions a priority of 0 (never drawn, every weight 0)
        # or a negative one (p ** alpha complex, NaN weights)
        if not (np.isfinite(self.max_priority) and self.max_priority > 0):
            self.max_priority = 1.0
        if "priorities" in state:
            leaves = np.asarray(state["priorities"], dtype=np.float64)
            good = np.isfinite(leaves) & (leaves >= 0)
            leaves = np.where(good, leaves, np.where(self._valid, self.max_priority ** self.alpha, 0.0))
        else:  # it was a KeyError traceback
            leaves = np.where(self._valid, self.max_priority ** self.alpha, 0.0)
        self.sums.set_all(leaves)
        self.mins.set_all(np.where(leaves > 0, leaves, np.inf))
        self.beta = float(state.get("beta", self.beta))
