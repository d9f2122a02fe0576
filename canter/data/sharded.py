"""A replay buffer made of independent shards, one per asynchronous data source (Ape-X explorers).

:class:`~canter.data.ReplayBuffer` stores ``n_envs`` streams that advance together, one vector
step at a time. Ape-X explorers deliver their rollouts at different times, so the central buffer
keeps one such buffer per explorer: each explorer's envs stay continuous streams (n-step windows
and truncation bootstrapping work as in a single-process run), and sampling draws from the
shards in proportion to what they hold (their transition count, or their total priority for
prioritized shards), so every stored transition is drawn with the same probability it would
have in one big buffer.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from canter.data.batch import ReplayBatch
from canter.data.prioritized import PrioritizedReplayBuffer, warn_non_finite
from canter.data.replay import ReplayBuffer, check_batch_size
from canter.errors import CanterError
from canter.utils import stream_rng


class ShardedReplay:
    """Several :class:`ReplayBuffer` shards behind one ``add(shard, ...)`` / ``sample`` interface.

    Sampled ``indices`` are global: ``shard * slots_per_shard + local index``, so
    :meth:`update_priorities` can route them back.
    """

    def __init__(self, shards: list[ReplayBuffer], seed: int = 0) -> None:
        if not shards:
            raise ValueError("ShardedReplay needs at least one shard")
        self.shards = shards
        self.prioritized = isinstance(shards[0], PrioritizedReplayBuffer)
        self.stride = max(s.length * s.n_envs for s in shards)
        self.rng = stream_rng(seed, "sharded")
        if not self.prioritized:  # like a uniform ReplayBuffer: nothing to update or anneal
            self.update_priorities = self.set_progress = None  # type: ignore[assignment]

    def __len__(self) -> int:
        return sum(len(s) for s in self.shards)

    @property
    def reward_transform(self) -> Any:
        """The shards' :attr:`ReplayBuffer.reward_transform` (each shard applies its own when sampled)."""
        return self.shards[0].reward_transform

    def add_rollout(
        self, shard: int, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, last_obs: np.ndarray,
        terminated: np.ndarray, valid: np.ndarray, truncated: np.ndarray | None = None,
        infos: list[dict[str, Any]] | None = None,
    ) -> None:
        """Store a time-major rollout ``[T, n_envs, ...]`` of one source, step by step, in its shard
        (``infos``: each step's vector info, for hindsight shards that keep some of its entries)."""
        buf = self.shards[shard]
        for t in range(len(rewards)):
            next_obs = obs[t + 1] if t + 1 < len(rewards) else last_obs
            info = {} if infos is None else {"info": infos[t]}
            buf.add(obs[t], actions[t], rewards[t], next_obs, terminated[t], valid[t],
                    None if truncated is None else truncated[t], **info)

    def new_episodes(self) -> None:
        """Every shard's :meth:`ReplayBuffer.new_episodes <canter.data.ReplayBuffer.new_episodes>`: all the
        explorers' envs start fresh episodes (a resume)."""
        for s in self.shards:
            s.new_episodes()

    def set_progress(self, step: int, total_steps: int) -> None:
        """Anneal every prioritized shard's importance-sampling exponent."""
        for s in self.shards:
            if isinstance(s, PrioritizedReplayBuffer):
                s.set_progress(step, total_steps)

    def _mass(self) -> np.ndarray:
        if self.prioritized:
            return np.array([s.sums.total if len(s) else 0.0 for s in self.shards], dtype=np.float64)
        return np.array([len(s) for s in self.shards], dtype=np.float64)

    def sample(self, batch_size: int) -> ReplayBatch:
        """Draw ``batch_size`` transitions; shards are chosen in proportion to their mass."""
        check_batch_size(batch_size)
        mass = self._mass()
        if mass.sum() <= 0:
            raise CanterError("cannot sample from an empty replay buffer")
        counts = self.rng.multinomial(batch_size, mass / mass.sum())
        parts: list[ReplayBatch] = []
        if self.prioritized:  # weights relative to the smallest priority in any shard, as one buffer would
            global_min = min(s.mins.min for s in self.shards if len(s))
        for i, (s, n) in enumerate(zip(self.shards, counts)):
            if n == 0:
                continue
            b = s.sample(int(n))
            if self.prioritized:
                b = b._replace(weights=b.weights * float(s.mins.min / global_min) ** (-s.beta))
            parts.append(b._replace(indices=b.indices + i * self.stride))
        return ReplayBatch(*(torch.cat(fields) for fields in zip(*parts)))

    def update_priorities(self, indices: torch.Tensor | np.ndarray, td: torch.Tensor | np.ndarray) -> None:
        """Route new priorities to the shards the sampled transitions came from."""
        idx = np.asarray(indices.cpu().numpy() if isinstance(indices, torch.Tensor) else indices, dtype=np.int64)
        err = np.asarray(td.detach().cpu().numpy() if isinstance(td, torch.Tensor) else td, dtype=np.float64)
        finite = np.isfinite(err)
        if not finite.all():  # skipped by the shards too, but warned about once for the batch (not once per shard)
            warn_non_finite(self, finite)
            idx, err = idx[finite], err[finite]
        shard, local = np.divmod(idx, self.stride)
        for i in np.unique(shard):
            sel = shard == i
            self.shards[int(i)].update_priorities(local[sel], err[sel])  # type: ignore[attr-defined]
        top = max(s.max_priority for s in self.shards)  # type: ignore[attr-defined]
        for s in self.shards:  # new transitions of every shard get the buffer-wide maximum, as in one buffer
            s.max_priority = top  # type: ignore[attr-defined]

    def state_dict(self) -> dict[str, Any]:
        """Every shard's state and the shard-choice generator."""
        return {"shards": [s.state_dict() for s in self.shards], "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (same number and settings of shards)."""
        saved = state["shards"]
        if len(saved) != len(self.shards):
            raise CanterError(f"replay buffer shard count mismatch: saved {len(saved)}, this run {len(self.shards)}")
        for s, st in zip(self.shards, saved):
            s.load_state_dict(st)
        self.rng.bit_generator.state = state["rng"]
