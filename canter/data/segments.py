"""A replay of recent on-policy segments (``T`` steps x ``N`` envs), for ACER.

Each segment keeps its time structure (Retrace needs consecutive steps), the behaviour policy's
probabilities of every action (for the truncated importance weights and the bias correction)
and the observation after its last step (for bootstrapping). Rows are stored exactly as the
vector env produced them under the NEXT_STEP autoreset convention: a row with ``valid`` False
only reset its env, its observation is the previous episode's final one, and every loss masks it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import torch

from canter.errors import CanterError
from canter.utils import to_numpy

if TYPE_CHECKING:
    from canter.data.pixel_columns import PixelColumns


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
    """Ring buffer of ``capacity`` segments, preallocated; the segment being collected is a slot in it.

    ``pixel_columns`` (:class:`~canter.data.pixel_columns.PixelColumns`, for float packed observations with
    images): the pixels are stored as ``uint8`` (``pixels``) beside the other columns (``obs``), a quarter of the
    memory, and the segments given back put the float rows back together (the very values stored)."""

    def __init__(
        self, capacity: int, n_steps: int, n_envs: int, obs_shape: tuple[int, ...], n_actions: int,
        obs_dtype: torch.dtype = torch.float32, pixel_columns: PixelColumns | None = None,
    ) -> None:
        self.capacity, self.n_steps, self.n_envs = capacity, n_steps, n_envs
        S, T, N = capacity, n_steps, n_envs
        self.columns = pixel_columns
        if pixel_columns is not None:
            if tuple(obs_shape) != (pixel_columns.width,):
                raise ValueError(f"pixel columns of {pixel_columns.width}-wide observations, got shape {obs_shape}")
            obs_shape = (pixel_columns.n_rest,)
            self.pixels = torch.zeros((S, T + 1, N, pixel_columns.n_pixels), dtype=torch.uint8)
            self.ARRAYS = type(self).ARRAYS + ("pixels",)
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
        """Restore :meth:`state_dict` into a replay built with the same settings (one storing pixels as bytes
        also takes the whole float rows a plain replay saved)."""
        size = int(state["size"])
        if self.columns is not None and "pixels" not in state and np.shape(state["obs"])[-1:] == (self.columns.width,):
            state = dict(state)
            state["pixels"], state["obs"] = (torch.from_numpy(x) for x in self.columns.split(to_numpy(state["obs"])))
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
        self._write_obs(s, t, obs)  # NumPy from Agent.sample; tensors from other callers
        self.actions[s, t] = torch.as_tensor(actions)
        self.probs[s, t] = torch.as_tensor(probs)
        self.rewards[s, t] = torch.from_numpy(np.asarray(rewards, dtype=np.float32))
        self.terminated[s, t] = torch.from_numpy(np.asarray(terminated, dtype=np.float32))
        self.dones[s, t] = torch.from_numpy(np.asarray(dones, dtype=np.float32))
        self.valid[s, t] = torch.from_numpy(np.asarray(valid, dtype=bool))

    def _write_obs(self, s: int, t: int, obs: torch.Tensor | np.ndarray) -> None:
        if self.columns is None:
            self.obs[s, t] = torch.as_tensor(obs)
        else:
            pixels, rest = self.columns.split(to_numpy(obs))
            self.pixels[s, t], self.obs[s, t] = torch.from_numpy(pixels), torch.from_numpy(rest)

    def _joined(self, pixels: torch.Tensor, rest: torch.Tensor) -> torch.Tensor:
        """Observations with their pixels put back (the float rows stored)."""
        return torch.from_numpy(self.columns.join(pixels.numpy(), rest.numpy()))

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
        self._write_obs(s, self.n_steps, next_obs)
        self.pos = (s + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)
        return self.segment(s)

    def segment(self, s: int) -> SegmentBatch:
        """Segment in slot ``s`` (views, no copies; the observations of a replay storing pixels as bytes are
        put back together in a new tensor)."""
        obs = self.obs[s] if self.columns is None else self._joined(self.pixels[s], self.obs[s])
        return SegmentBatch(obs, self.actions[s], self.probs[s], self.rewards[s], self.terminated[s],
                            self.dones[s], self.valid[s])

    def sample(self, rng: np.random.Generator) -> SegmentBatch:
        """A stored segment per env column, each env's from an independently chosen slot."""
        idx = torch.from_numpy(rng.integers(0, self.size, size=self.n_envs))
        cols = torch.arange(self.n_envs)

        def take(x: torch.Tensor) -> torch.Tensor:
            return x[idx, :, cols].transpose(0, 1)  # [N, T, ...] -> [T, N, ...]

        obs = take(self.obs) if self.columns is None else self._joined(take(self.pixels), take(self.obs))
        return SegmentBatch(obs, *(take(x) for x in (self.actions, self.probs, self.rewards, self.terminated,
                                                     self.dones, self.valid)))
