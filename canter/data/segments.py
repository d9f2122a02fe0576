"""A replay of recent on-policy segments (``T`` steps x ``N`` envs), for ACER.

Each segment keeps its time structure (Retrace needs consecutive steps), the behaviour policy's
probabilities of every action (for the truncated importance weights and the bias correction)
and the observation after its last step (for bootstrapping). Rows are stored exactly as the
vector env produced them under the NEXT_STEP autoreset convention: a row with ``valid`` False
only reset its env, its observation is the previous episode's final one, and every loss masks it.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch

from canter.errors import CanterError


class SegmentBatch(NamedTuple):
    """``T`` consecutive vector steps of ``N`` envs (time-major)."""

    obs: torch.Tensor  #: ``[T + 1, N, *obs_shape]``: the ``T`` observations acted on, then the next one
    actions: torch.Tensor  #: ``[T, N]`` (int64)
    behaviour_probs: torch.Tensor  #: ``[T, N, n_actions]``: mu(.|x_t) of the policy that acted
    rewards: torch.Tensor  #: ``[T, N]``
    terminated: torch.Tensor  #: ``[T, N]`` float, 1 where the episode terminated at this step
    dones: torch.Tensor  #: ``[T, N]`` float, 1 where it terminated or was truncated
    valid: torch.Tensor  #: ``[T, N]`` bool, False for autoreset-only rows


class SegmentReplay:
    """Ring buffer of ``capacity`` segments, preallocated; the segment being collected is a slot in it."""

    def __init__(
        self, capacity: int, n_steps: int, n_envs: int, obs_shape: tuple[int, ...], n_actions: int,
        obs_dtype: torch.dtype = torch.float32,
    ) -> None:
        self.capacity, self.n_steps, self.n_envs = capacity, n_steps, n_envs
        S, T, N = capacity, n_steps, n_envs
        self.obs = torch.zeros((S, T + 1, N) + obs_shape, dtype=obs_dtype)
        self.actions = torch.zeros((S, T, N), dtype=torch.int64)
        self.probs = torch.zeros((S, T, N, n_actions))
        self.rewards = torch.zeros((S, T, N))
        self.terminated = torch.zeros((S, T, N))
        self.dones = torch.zeros((S, T, N))
        self.valid = torch.zeros((S, T, N), dtype=torch.bool)
        self.pos = 0  #: slot being filled
        self.size = 0  #: complete segments stored

    ARRAYS = ("obs", "actions", "probs", "rewards", "terminated", "dones", "valid")

    def state_dict(self) -> dict[str, Any]:
        """The stored segments (the slots in use) and the ring's position, for an exact resume."""
        return {**{key: getattr(self, key)[:self.size].clone() for key in self.ARRAYS},
                "pos": self.pos, "size": self.size, "capacity": self.capacity}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` into a replay built with the same settings."""
        size = int(state["size"])
        if int(state["capacity"]) != self.capacity or state["obs"].shape[1:] != self.obs.shape[1:]:
            raise CanterError(f"segment replay mismatch: saved {int(state['capacity'])} segments of "
                              f"{tuple(state['obs'].shape[1:])}, this replay {self.capacity} of {tuple(self.obs.shape[1:])}")
        for key in self.ARRAYS:
            getattr(self, key)[:size] = state[key]
        self.pos, self.size = int(state["pos"]), size

    @property
    def transitions(self) -> int:
        """Vector-env rows stored in complete segments (``size * T * N``)."""
        return self.size * self.n_steps * self.n_envs

    def add(
        self, t: int, obs: torch.Tensor | np.ndarray, actions: torch.Tensor | np.ndarray,
        probs: torch.Tensor | np.ndarray, rewards: np.ndarray,
        terminated: np.ndarray, dones: np.ndarray, valid: np.ndarray,
    ) -> None:
        """Store step ``t`` of the segment being collected."""
        s = self.pos
        self.obs[s, t] = torch.as_tensor(obs)  # NumPy from Agent.sample; tensors from other callers
        self.actions[s, t] = torch.as_tensor(actions)
        self.probs[s, t] = torch.as_tensor(probs)
        self.rewards[s, t] = torch.from_numpy(np.asarray(rewards, dtype=np.float32))
        self.terminated[s, t] = torch.from_numpy(np.asarray(terminated, dtype=np.float32))
        self.dones[s, t] = torch.from_numpy(np.asarray(dones, dtype=np.float32))
        self.valid[s, t] = torch.from_numpy(np.asarray(valid, dtype=bool))

    def slot_copy(self) -> dict[str, torch.Tensor]:
        """Copies of the slot being filled (an older segment, once the ring is full), which
        :meth:`restore_slot` puts back where the segment under way is dropped."""
        return {key: getattr(self, key)[self.pos].clone() for key in self.ARRAYS}

    def restore_slot(self, saved: dict[str, torch.Tensor]) -> None:
        """Put back what :meth:`slot_copy` copied."""
        for key, value in saved.items():
            getattr(self, key)[self.pos] = value

    def finish(self, next_obs: torch.Tensor) -> SegmentBatch:
        """Store the observation after the last step, close the segment and return it."""
        s = self.pos
        self.obs[s, self.n_steps] = next_obs
        self.pos = (s + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)
        return self.segment(s)

    def segment(self, s: int) -> SegmentBatch:
        """Segment in slot ``s`` (views, no copies)."""
        return SegmentBatch(self.obs[s], self.actions[s], self.probs[s], self.rewards[s], self.terminated[s],
                            self.dones[s], self.valid[s])

    def sample(self, rng: np.random.Generator) -> SegmentBatch:
        """A stored segment per env column, each env's from an independently chosen slot."""
        idx = torch.from_numpy(rng.integers(0, self.size, size=self.n_envs))
        cols = torch.arange(self.n_envs)

        def take(x: torch.Tensor) -> torch.Tensor:
            return x[idx, :, cols].transpose(0, 1)  # [N, T, ...] -> [T, N, ...]

        return SegmentBatch(*(take(x) for x in (self.obs, self.actions, self.probs, self.rewards, self.terminated,
                                                 self.dones, self.valid)))
