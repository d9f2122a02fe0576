"""Replay buffers for frame-stacked observations that store each frame once.

An Atari observation is a stack of the last ``S`` frames (``uint8 [4, 84, 84]`` by default; ``env_kwargs``'
``frame_stack`` and ``screen_size`` change ``S`` and the frame's shape, which this buffer takes as they come); storing
whole stacks keeps every frame ``S`` times (28 KB per transition, 28 GB per million). Here row
``t`` of the stream stores only the newest frame of its stack (7 KB), plus one byte ``hist``: how
many of the stack's older frames are the frames of the rows just before it (0 to ``S - 1``), and
one flag ``pad_zero`` telling what fills the remaining older slots. ``hist`` is *measured* when
the row is written, by comparing the incoming stack with the stored frames, so a rebuilt stack
is always exactly the observation the agent saw:

- After an episode start nothing from the previous episode leaks into a stack: gymnasium's
  ``FrameStackObservation`` (the wrapper path) pads with copies of the first frame (as DQN
  Zoo does), ale-py's native vector env with zero frames (as Stable-Baselines3's ``VecFrameStack``
  does); both are stored as ``hist = 0`` plus the padding kind and rebuilt the same way.
- When the ring buffer overwrites its oldest row, the ``S - 1`` rows after it lose part of their
  history; they stop being sampleable at that moment (3 transitions out of the capacity).

A stack whose older slots are neither the previous frames nor uniform padding cannot be stored
this way and raises a :class:`~canter.errors.CanterError` (use the plain buffer for such envs).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from canter.data.prioritized import PrioritizedReplayBuffer
from canter.data.replay import ReplayBuffer
from canter.errors import CanterError


class FrameStackMixin:
    """Frame-once storage for :class:`ReplayBuffer` subclasses (see the module docstring).

    Observations are ``[S, *frame_shape]`` stacks, newest frame last; with ``frame_channels`` C > 1 (RGB Atari
    frames, :mod:`canter.envs.atari_rgb`) they are ``[S * C, *rest]``, each frame's C channels together, and a
    row stores one ``[C, *rest]`` frame.
    """

    ARRAYS = ReplayBuffer.ARRAYS + ("hist", "pad_zero")

    def __init__(self, *args: Any, frame_channels: int = 1, **kwargs: Any) -> None:
        if isinstance(frame_channels, bool) or not isinstance(frame_channels, int) or frame_channels < 1:
            raise ValueError(f"frame_channels must be a whole number >= 1, got {frame_channels!r}")
        self.frame_channels = frame_channels
        super().__init__(*args, **kwargs)

    def _obs_storage(self, shape: tuple[int, int], obs_shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        c = self.frame_channels
        # a stack of 1 (env_kwargs frame_stack: 1) stores its frames as they are
        if len(obs_shape) < 2 or obs_shape[0] % c:
            raise CanterError(f"a frame-stack replay buffer needs [stack{' x ' + str(c) if c > 1 else ''}, ...] "
                              f"observations, got shape {obs_shape}")
        self.stack, self.frame_shape = int(obs_shape[0]) // c, ((c,) if c > 1 else ()) + tuple(obs_shape[1:])
        self.obs_shape = tuple(obs_shape)
        if shape[0] - 1 < self.stack:  # a stack would reach back onto its own row; or none would survive a wrap
            n = shape[1]
            raise CanterError(
                f"a frame-stack replay buffer needs at least {self.stack} rows per env: capacity (buffer_size) "
                f"at least {n * (self.stack - 1) + 1} for {n} envs, got {self.capacity}"
            )
        self.hist = np.zeros(shape, dtype=np.uint8)
        self.pad_zero = np.zeros(shape, dtype=bool)
        self.head_stack = np.zeros((shape[1],) + obs_shape, dtype=dtype)
        self._lags = np.arange(self.stack - 1, -1, -1)  # slot j holds the frame ``lags[j]`` rows back
        return np.zeros(shape + self.frame_shape, dtype=dtype)

    def _flat(self) -> None:
        super()._flat()
        n = self.length * self.n_envs
        self._hist, self._pad_zero = self.hist.reshape(n), self.pad_zero.reshape(n)

    def _head_matches(self, obs: np.ndarray) -> bool:
        return np.array_equal(self.head_stack, obs)

    def _write_obs(self, row: int, obs: np.ndarray) -> None:
        stacks = np.asarray(obs)
        n, S = self.n_envs, self.stack
        frames = stacks.reshape((n, S) + self.frame_shape)  # RGB: [n, S * 3, H, W] -> [n, S, 3, H, W]
        self.obs[row] = frames[:, -1]
        hist = np.zeros(n, dtype=np.uint8)
        going = np.ones(n, dtype=bool)
        for k in range(1, S):
            if not self.full and row - k < 0:  # no earlier row in the stream yet
                break
            prev = self.obs[(row - k) % self.length]
            going &= (frames[:, -1 - k] == prev).reshape(n, -1).all(1)
            hist += going
        pad_zero = np.zeros(n, dtype=bool)
        for e in np.flatnonzero(hist < S - 1):
            pad, oldest = frames[e, : S - 1 - hist[e]], frames[e, S - 1 - hist[e]]
            if not pad.any():
                pad_zero[e] = True
            elif not (pad == oldest).all():
                raise CanterError(
                    "observations are not frame stacks (the older frames are neither the previous frames nor "
                    "padding); use a plain replay buffer for this env"
                )
        self.hist[row], self.pad_zero[row] = hist, pad_zero
        self.head_stack[:] = stacks

    def _gather_obs(self, idx: np.ndarray) -> np.ndarray:
        row, env = np.divmod(idx, self.n_envs)
        hist = self._hist[idx].astype(np.int64)
        lag = np.minimum(self._lags[None, :], hist[:, None])  # [B, S]
        out = self._obs[((row[:, None] - lag) % self.length) * self.n_envs + env[:, None]]
        zero = (self._lags[None, :] > hist[:, None]) & self._pad_zero[idx][:, None]
        if zero.any():
            out[zero] = 0
        return out.reshape((len(idx),) + self.obs_shape)  # RGB: each frame's channels back in the stack's

    def _advance(self) -> None:
        super()._advance()
        if not self.full:
            return
        for k in range(1, self.stack):  # rows whose history includes the row just taken over
            r = (self.pos + k) % self.length
            lost = self.valid[r]
            if lost.any():
                self.count -= int(lost.sum())
                lost[:] = False
                self._cleared(r)

    def nbytes(self) -> int:
        """Bytes held, the head-of-stack frames included."""
        return super().nbytes() + self.head_stack.nbytes

    def state_dict(self) -> dict[str, Any]:
        """The buffer's state plus the head-of-stack frames."""
        state = super().state_dict()
        state["head_stack"] = self.head_stack.copy()
        state["frame_channels"] = self.frame_channels
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved."""
        try:
            saved = int(state.get("frame_channels", 1))  # buffers saved before RGB frames: 1
        except (TypeError, ValueError):  # a hand-edited file's 'x' was a ValueError traceback
            raise CanterError(f"the replay buffer's saved state is corrupt: frame_channels "
                              f"{state.get('frame_channels')!r} is not a whole number") from None
        if saved != self.frame_channels:
            raise CanterError(f"replay buffer frame_channels mismatch: saved {saved} channels a frame, this buffer "
                              f"{self.frame_channels}")
        super().load_state_dict(state)
        self.head_stack[:] = np.asarray(state["head_stack"])

    def _check_own_state(self, state: dict[str, Any]) -> None:
        """The head-of-stack frames are there and fit (checked before the arrays are replaced: a file without
        them was a KeyError after the buffer's contents were)."""
        super()._check_own_state(state)
        head = np.asarray(state["head_stack"])
        if head.shape != self.head_stack.shape:
            raise ValueError(f"head_stack has shape {head.shape}, this buffer's {self.head_stack.shape}")


class FrameStackReplay(FrameStackMixin, ReplayBuffer):
    """Uniform replay storing each frame of frame-stacked observations once."""


class PrioritizedFrameStackReplay(FrameStackMixin, PrioritizedReplayBuffer):
    """Prioritized replay storing each frame of frame-stacked observations once."""


def bytes_per_transition(buffer: ReplayBuffer) -> float:
    """Measured bytes of ``buffer``'s arrays per transition of capacity."""
    return buffer.nbytes() / buffer.capacity
