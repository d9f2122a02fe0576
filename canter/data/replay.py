"""Uniform replay buffer: preallocated numpy storage shared by all vector envs."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from canter.data.batch import ReplayBatch


class ReplayBuffer:
    """A ring buffer of transitions ``(obs, action, reward, next_obs, terminated)``.

    ``add`` takes one vector step and keeps only its valid rows; ``sample`` draws uniformly with
    the buffer's own seeded generator, so sampling is reproducible and resumable.
    """

    def __init__(
        self, capacity: int, obs_shape: tuple[int, ...], act_shape: tuple[int, ...],
        obs_dtype: np.dtype = np.float32, act_dtype: np.dtype = np.float32, gamma: float = 0.99, seed: int = 0,
    ) -> None:
        self.capacity = capacity
        self.gamma = gamma
        self.obs = np.zeros((capacity,) + obs_shape, dtype=obs_dtype)
        self.next_obs = np.zeros((capacity,) + obs_shape, dtype=obs_dtype)
        self.actions = np.zeros((capacity,) + act_shape, dtype=act_dtype)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.terminated = np.zeros(capacity, dtype=np.float32)
        self.pos = 0
        self.size = 0
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.size

    def add(
        self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, next_obs: np.ndarray,
        terminated: np.ndarray, valid: np.ndarray | None = None,
    ) -> None:
        """Add a batch of transitions (rows where ``valid`` is False are skipped)."""
        if valid is not None and not valid.all():
            obs, actions, rewards, next_obs, terminated = (
                x[valid] for x in (obs, actions, rewards, next_obs, terminated)
            )
        n = len(rewards)
        if n == 0:
            return
        idx = (self.pos + np.arange(n)) % self.capacity
        self.obs[idx] = obs
        self.next_obs[idx] = next_obs
        self.actions[idx] = actions
        self.rewards[idx] = rewards
        self.terminated[idx] = terminated
        self.pos = int((self.pos + n) % self.capacity)
        self.size = min(self.size + n, self.capacity)

    def sample(self, batch_size: int) -> ReplayBatch:
        """Draw ``batch_size`` transitions uniformly (with replacement)."""
        idx = self.rng.integers(0, self.size, size=batch_size)
        return ReplayBatch(
            torch.from_numpy(self.obs[idx]),
            torch.from_numpy(self.actions[idx]),
            torch.from_numpy(self.rewards[idx]),
            torch.from_numpy(self.next_obs[idx]),
            torch.from_numpy(self.terminated[idx]),
            torch.full((batch_size,), self.gamma),
            torch.ones(batch_size),
            torch.from_numpy(idx),
        )

    def state_dict(self) -> dict[str, Any]:
        """Arrays and counters (for saving the buffer with a checkpoint)."""
        n = self.size
        return {
            "obs": self.obs[:n], "next_obs": self.next_obs[:n], "actions": self.actions[:n],
            "rewards": self.rewards[:n], "terminated": self.terminated[:n],
            "pos": self.pos, "size": self.size, "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        n = int(state["size"])
        for key in ("obs", "next_obs", "actions", "rewards", "terminated"):
            getattr(self, key)[:n] = np.asarray(state[key])
        self.pos, self.size = int(state["pos"]), n
        self.rng.bit_generator.state = state["rng"]
