"""On-policy rollout storage (preallocated tensors) and generalised advantage estimation."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from canter.data.batch import RolloutBatch, SequenceBatch
from canter.utils import to_numpy

if TYPE_CHECKING:
    from canter.data.pixel_columns import PixelColumns


def compute_gae(
    rewards: np.ndarray,
    values: np.ndarray,
    last_values: np.ndarray,
    terminated: np.ndarray,
    dones: np.ndarray,
    gamma: float,
    gae_lambda: float,
) -> np.ndarray:
    """Generalised advantage estimates for a ``[T, N]`` rollout.

    ``values[t]`` is V(obs[t]) and the value of the successor of step ``t`` is ``values[t + 1]``
    (``last_values`` after the last step). With ``NEXT_STEP`` autoreset the observation after an
    episode's last step is its real final observation, so a *truncated* step bootstraps from
    V(final obs) while a *terminated* one does not; ``dones`` (terminated or truncated) cuts the
    recursion between episodes.
    """
    T = rewards.shape[0]
    adv = np.zeros_like(rewards, dtype=np.float32)
    next_values = np.concatenate([values[1:], last_values[None]], axis=0)
    deltas = rewards + gamma * next_values * (1.0 - terminated) - values
    carry = (gamma * gae_lambda) * (1.0 - dones)
    last = np.zeros(last_values.shape, dtype=np.result_type(deltas, carry))  # float32 inputs: float32 (as SB3)
    for t in range(T - 1, -1, -1):  # in place: no allocation per step
        np.multiply(carry[t], last, out=last)
        np.add(deltas[t], last, out=last)
        adv[t] = last
    return adv


class RolloutBuffer:
    """``n_steps x n_envs`` storage for one on-policy rollout, allocated once.

    ``pixel_columns`` (:class:`~canter.data.pixel_columns.PixelColumns`, for float packed observations with
    images): the pixels are stored as ``uint8`` (``pixels``) beside the other columns (``obs``), a quarter of the
    memory, and the batches put the float rows back together (the very values stored)."""

    def __init__(
        self, n_steps: int, n_envs: int, obs_shape: tuple[int, ...], act_shape: tuple[int, ...],
        obs_dtype: torch.dtype = torch.float32, act_dtype: torch.dtype = torch.float32,
        pixel_columns: PixelColumns | None = None,
    ) -> None:
        self.n_steps, self.n_envs = n_steps, n_envs
        shape = (n_steps, n_envs)
        self.columns = pixel_columns
        self._arrays = self._ARRAYS
        if pixel_columns is not None:
            if tuple(obs_shape) != (pixel_columns.width,):
                raise ValueError(f"pixel columns of {pixel_columns.width}-wide observations, got shape {obs_shape}")
            obs_shape = (pixel_columns.n_rest,)
            self.pixels = torch.zeros(shape + (pixel_columns.n_pixels,), dtype=torch.uint8)
            self._pixels_np = self.pixels.numpy()
            self._arrays = self._ARRAYS + ("pixels",)
        self.obs = torch.zeros(shape + obs_shape, dtype=obs_dtype)
        self.actions = torch.zeros(shape + act_shape, dtype=act_dtype)
        self.log_probs = torch.zeros(shape)
        self.values = torch.zeros(shape)
        # numpy views of the same memory: a numpy row write costs a fraction of a torch one
        self._obs_np, self._act_np = self.obs.numpy(), self.actions.numpy()
        self._logp_np, self._values_np = self.log_probs.numpy(), self.values.numpy()
        self.rewards = np.zeros(shape, dtype=np.float32)
        self.terminated = np.zeros(shape, dtype=np.float32)
        self.dones = np.zeros(shape, dtype=np.float32)
        self.valid = np.zeros(shape, dtype=bool)
        self.pos = 0

    def add(
        self, obs: torch.Tensor | np.ndarray, actions: torch.Tensor | np.ndarray,
        log_probs: torch.Tensor | np.ndarray | None, values: torch.Tensor | np.ndarray,
        rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray, valid: np.ndarray,
    ) -> None:
        """Store one vector step (``valid`` False marks autoreset-only steps, dropped later). ``log_probs``
        None (an algorithm whose ``act`` gives none, its ``learn`` not reading them) is stored as NaN: a
        ``learn`` that does read them gets a non-finite loss, which the divergence guard stops the run on."""
        t = self.pos  # NumPy arrays or tensors (Agent.sample gives arrays where the NumPy path acted; a GPU's
        if self.columns is None:  # tensors come to host memory here)
            self._obs_np[t] = to_numpy(obs)
        else:
            self._pixels_np[t], self._obs_np[t] = self.columns.split(to_numpy(obs))
        self._act_np[t] = to_numpy(actions)
        self._logp_np[t] = np.nan if log_probs is None else to_numpy(log_probs)
        self._values_np[t] = to_numpy(values)
        self.rewards[t] = rewards
        self.terminated[t] = terminated
        np.logical_or(terminated, truncated, out=self.dones[t], casting="unsafe")
        self.valid[t] = valid
        self.pos += 1

    @property
    def full(self) -> bool:
        """True when ``n_steps`` vector steps are stored."""
        return self.pos == self.n_steps

    _ARRAYS = ("obs", "actions", "log_probs", "values", "rewards", "terminated", "dones", "valid")

    def put_obs(self, obs: torch.Tensor | np.ndarray) -> None:
        """Write every row's observations at once (``[n_steps, n_envs, *shape]``: a rollout gathered elsewhere, as
        the synchronous explorer learner's), their pixels as bytes where the buffer stores them so."""
        if self.columns is None:
            self.obs.copy_(torch.as_tensor(obs))
        else:
            self._pixels_np[:], self._obs_np[:] = self.columns.split(to_numpy(obs))

    def state_dict(self) -> dict[str, Any]:
        """The rows of a rollout in progress (none between rollouts), for an exact resume."""
        t = self.pos
        return {"pos": t, **{k: getattr(self, k)[:t].copy() if isinstance(getattr(self, k), np.ndarray)
                             else getattr(self, k)[:t].clone() for k in self._arrays if t}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` into a buffer of the same shape (one storing pixels as bytes also takes
        the whole float rows a plain buffer saved)."""
        t = int(state["pos"])
        if t and self.columns is not None and "pixels" not in state:
            state = dict(state)
            state["pixels"], state["obs"] = self.columns.split(np.asarray(state["obs"]))
        for k in self._arrays if t else ():
            dst = getattr(self, k)
            dst[:t] = state[k] if isinstance(dst, np.ndarray) else torch.as_tensor(np.asarray(state[k]))
        self.pos = t

    def _advantages(self, last_values: torch.Tensor, gamma: float, gae_lambda: float) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE advantages and returns ``[T, N]``; empties the buffer."""
        adv = compute_gae(
            self.rewards, self.values.numpy(), to_numpy(last_values), self.terminated, self.dones, gamma, gae_lambda
        )
        self.pos = 0
        adv_t = torch.from_numpy(adv)
        return adv_t, adv_t + self.values

    def finish_sequences(self, last_values: torch.Tensor, gamma: float, gae_lambda: float, starts: np.ndarray,
                         state: tuple[torch.Tensor, torch.Tensor]) -> SequenceBatch:
        """Compute advantages and returns; return the whole rollout, time-major (recurrent policies:
        ``starts [T, N]`` and the memory ``state`` at the rollout's start, see :class:`SequenceBatch`)."""
        adv, returns = self._advantages(last_values, gamma, gae_lambda)
        obs = self.obs.clone() if self.columns is None else self._joined()
        return SequenceBatch(obs, self.actions.clone(), self.log_probs.clone(), self.values.clone(), adv,
                             returns, torch.from_numpy(self.valid.copy()), torch.from_numpy(starts.copy()), state)

    def _joined(self, rows: np.ndarray | None = None) -> torch.Tensor:
        """The stored observations with their pixels put back, ``[T, N, width]`` (``rows`` given: those flat
        rows, ``[len(rows), width]``)."""
        pixels, rest = self._pixels_np, self._obs_np
        if rows is not None:
            pixels, rest = pixels.reshape(-1, pixels.shape[-1])[rows], rest.reshape(-1, rest.shape[-1])[rows]
        return torch.from_numpy(self.columns.join(pixels, rest))

    def finish(self, last_values: torch.Tensor, gamma: float, gae_lambda: float) -> RolloutBatch:
        """Compute advantages and returns; return the valid transitions, flattened."""
        adv_t, returns = self._advantages(last_values, gamma, gae_lambda)
        mask = self.valid.reshape(-1)
        rows = None if mask.all() else np.flatnonzero(mask)
        if rows is None:
            def flat(x: torch.Tensor) -> torch.Tensor:
                return x.reshape((-1,) + x.shape[2:])
        else:
            idx = torch.from_numpy(rows)

            def flat(x: torch.Tensor) -> torch.Tensor:
                return x.reshape((-1,) + x.shape[2:])[idx]
        obs = flat(self.obs) if self.columns is None else self._joined(rows).reshape(-1, self.columns.width)
        return RolloutBatch(
            obs, flat(self.actions), flat(self.log_probs), flat(self.values), flat(adv_t), flat(returns)
        )
