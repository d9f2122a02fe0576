"""Replay buffer: preallocated per-env streams, uniform sampling, n-step returns, save/load.

Storage is ``[T, n_envs]``: row ``t`` of column ``e`` holds env ``e``'s observation before its
``t``-th vector step, the action taken, the reward, and the ``terminated`` / ``done`` / ``valid``
flags of that step. The next observation of row ``t`` is the observation of row ``t + 1``; the
newest next observations live in the head row (``pos``), which holds no transition yet. So
every frame is stored once (no separate ``next_obs`` array: memory-lean for images, which stay
in the space's dtype, e.g. uint8).

This is the NEXT_STEP autoreset stream (``docs/architecture.md`` section 3) stored as it comes:
the reset-only step after an episode end is a row with ``valid`` False whose observation is the
episode's real final observation, so a truncated transition bootstraps from it, and no sampled
n-step window ever crosses it.
"""
from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from canter.atomic import atomic_file
from canter.data.batch import ReplayBatch
from canter.errors import CanterError
from canter.utils import stream_rng

_ARRAYS = ("obs", "actions", "rewards", "terminated", "done", "valid")
_MAX_REJECTION_ROUNDS = 8


def check_batch_size(batch_size: Any) -> None:
    """A one-line :class:`CanterError` unless ``batch_size`` (of a replay buffer's ``sample``) is a whole number >= 1
    (a prioritized buffer's sample(0) divided by zero)."""
    if isinstance(batch_size, (bool, np.bool_)) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise CanterError(f"batch_size must be a whole number >= 1, got {batch_size!r}")

class ReplayBuffer:
    """Ring buffer of ``n_envs`` transition streams with uniform sampling.

    ``ceil(capacity / n_envs)`` rows per env are kept (plus the head row), each holding one vector
    step. ``add`` takes one vector step for all envs, including the rows that ``valid`` marks as
    reset-only; those are stored as episode boundaries and never sampled, so each episode end in the
    ring takes a row that holds no transition: ``capacity`` 1000 on 2 envs holds 908 transitions of
    10-step episodes, 964 of random CartPole's and 994 of Pendulum's 200-step ones. ``sample`` draws
    uniformly (with replacement) from the buffer's own seeded generator, so sampling is
    reproducible and resumable. With ``n_step > 1`` the sampled reward is the discounted sum of
    up to ``n_step`` rewards, cut at the episode's end (terminated: no bootstrap; truncated:
    bootstrap from the real final observation) and at the newest data; ``discounts`` is then
    ``gamma ** k`` for the ``k`` rewards used.

    The stored rewards are raw. :attr:`reward_transform` (None: none), when set, maps each stored
    reward before the n-step sum: the off-policy trainer sets the agent's reward scaling there
    (``normalize_reward``), so each step's reward is scaled and clipped on its own, as a one-step
    transition's is, rather than the sum being clipped as one.
    """

    #: applied to every stored reward of a sampled transition before the n-step sum (see the class docstring)
    reward_transform: Callable[[np.ndarray], np.ndarray] | None = None

    #: the ``[T, n_envs, ...]`` arrays saved with the buffer
    ARRAYS: tuple[str, ...] = _ARRAYS

    def __init__(
        self, capacity: int, obs_shape: tuple[int, ...], act_shape: tuple[int, ...],
        obs_dtype: np.dtype = np.float32, act_dtype: np.dtype = np.float32, gamma: float = 0.99, seed: int = 0,
        n_envs: int = 1, n_step: int = 1,
    ) -> None:
        if capacity < 1 or n_envs < 1 or n_step < 1:
            raise ValueError(f"capacity, n_envs and n_step must be >= 1, got {capacity}, {n_envs}, {n_step}")
        self.capacity, self.n_envs, self.n_step, self.gamma = capacity, n_envs, n_step, gamma
        self.length = math.ceil(capacity / n_envs) + 1  # rows per env, the head row included
        shape = (self.length, n_envs)
        self.obs = self._obs_storage(shape, tuple(obs_shape), np.dtype(obs_dtype))
        self.actions = np.zeros(shape + tuple(act_shape), dtype=act_dtype)
        self.rewards = np.zeros(shape, dtype=np.float32)
        self.terminated = np.zeros(shape, dtype=bool)
        self.done = np.zeros(shape, dtype=bool)
        self.valid = np.zeros(shape, dtype=bool)
        self.pos = 0  # head row: holds the newest next observations, no transition
        self.full = False  # every row has been written at least once
        self.started = False  # the head row holds an observation
        self._last_next_obs: np.ndarray | None = None  # the array last stored in the head row
        self._fresh = False  # new_episodes(): the next add starts every stream anew
        self.count = 0  # valid (sampleable) transitions
        self.rng = stream_rng(seed, "replay")
        self._powers = gamma ** np.arange(n_step, dtype=np.float64)
        self._float_obs = bool(np.issubdtype(self.obs.dtype, np.floating))
        self._flat()

    def _flat(self) -> None:
        """Flat ``[T * n_envs, ...]`` views used for indexing (flat index = row * n_envs + env)."""
        n = self.length * self.n_envs
        self._obs = self.obs.reshape((n,) + self.obs.shape[2:])
        self._actions = self.actions.reshape((n,) + self.actions.shape[2:])
        self._rewards, self._terminated = self.rewards.reshape(n), self.terminated.reshape(n)
        self._done, self._valid = self.done.reshape(n), self.valid.reshape(n)

    def __len__(self) -> int:
        return self.count

    # -- observation storage (hooks: frame-stacking buffers store single frames) ---------------
    def _obs_storage(self, shape: tuple[int, int], obs_shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """The ``[T, n_envs, ...]`` observation array."""
        return np.zeros(shape + obs_shape, dtype=dtype)

    def _head_matches(self, obs: np.ndarray) -> bool:
        """True when ``obs`` equals the head row's stored (next) observations."""
        return np.array_equal(self.obs[self.pos], obs, equal_nan=self._float_obs)

    def _write_obs(self, row: int, obs: np.ndarray) -> None:
        """Store the observations of one vector step in ``row``."""
        self.obs[row] = obs

    def _gather_obs(self, idx: np.ndarray) -> np.ndarray:
        """Observations at flat indices ``idx``."""
        return self._obs[idx]

    def nbytes(self) -> int:
        """Bytes held by the buffer's arrays."""
        return sum(getattr(self, key).nbytes for key in self.ARRAYS)

    # -- writing ------------------------------------------------------------------------------
    def add(
        self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, next_obs: np.ndarray,
        terminated: np.ndarray, valid: np.ndarray | None = None, truncated: np.ndarray | None = None,
    ) -> None:
        """Store one vector step: row ``e`` of every array is env ``e``'s transition.

        ``valid`` False marks reset-only rows (kept as boundaries, never sampled). ``valid`` None
        (not given): the NEXT_STEP stream's reset-only rows are found by the buffer, an env's step
        that follows its ``done`` step in the same stream (``obs`` the previous call's ``next_obs``)
        with reward 0 and no end of its own (as gymnasium gives it) is one, every other row is valid
        (a SAME_STEP loop's first step of an episode, where its reset observation equals the stored
        final one, is a transition where it has a reward or ends; one of reward 0 that does not end,
        as in a sparse-reward env, looks like gymnasium's reset step and is dropped: pass ``valid``
        there); before, every row was, so the reset-only step's
        ``(o_T, ignored action, 0, o'_0)`` crossed from one episode into the next. ``truncated``
        (optional) marks time-limit ends; without it an episode's end is still found from the
        reset-only row that follows it where ``valid`` marks that row; with ``valid`` None a time-limit
        end is seen only through ``truncated`` (without it, its reset-only step is stored as a
        transition, as before). If ``obs`` is not the ``next_obs`` of the previous call
        (e.g. the envs were reset in between), a boundary row is inserted first, so no
        transition's next observation is overwritten.
        """
        if len(rewards) != self.n_envs:
            raise ValueError(f"add() takes one row per env ({self.n_envs}), got {len(rewards)}")
        t = self.pos
        # ``obs`` is usually the very array passed as ``next_obs`` last time (arrays handed to add()
        # must not be modified afterwards), which the head row holds: no comparison needed
        boundary = self.started and (self._fresh or obs is not self._last_next_obs and not self._head_matches(obs))
        if boundary:
            self._advance()  # row t stays a boundary holding the previous next observations
            t = self.pos
        self._fresh = False
        term = np.asarray(terminated, dtype=bool)
        done = term if truncated is None else term | np.asarray(truncated, dtype=bool)
        if valid is None and self.started and not boundary:  # the row after a valid done row of the same stream
            prev = (t - 1) % self.length  # only resets its env (gymnasium's: reward 0, neither ended; a SAME_STEP
            # loop's first step of an episode whose reset observation equals the stored final one is a transition
            # where it has a reward or ends: one of reward 0 that does not end is dropped, such a loop passes valid)
            v = ~(self.done[prev] & self.valid[prev] & (np.asarray(rewards) == 0) & ~done)
        else:
            v = np.ones(self.n_envs, bool) if valid is None else np.asarray(valid, dtype=bool)
        self._write_obs(t, obs)
        self.actions[t] = actions
        self.rewards[t] = rewards
        self.terminated[t] = term
        self.done[t] = done
        self.valid[t] = v
        self.count += int(np.count_nonzero(v))  # (v.sum() costs ~1.5 µs more)
        self._written(t)
        self._advance()
        self._write_obs(self.pos, next_obs)
        self._last_next_obs = next_obs
        self.started = True

    def new_episodes(self) -> None:
        """The envs were reset outside the stream (a resume that could not restore them started fresh episodes):
        the next :meth:`add` puts a boundary row first, ending every env's running episode, also where the new
        first observations equal the stored next ones (a fixed start state), which the comparison alone took
        for the same episode going on (its n-step windows, and hindsight goals, then crossed into the new one)."""
        self._fresh = True

    def _advance(self) -> None:
        """Move the head one row on; the row it lands on stops being a transition."""
        self.pos += 1
        if self.pos == self.length:
            self.pos, self.full = 0, True
        head = self.valid[self.pos]
        if self.full and np.count_nonzero(head):
            self.count -= int(np.count_nonzero(head))
            head[:] = False
            self._cleared(self.pos)

    def _written(self, row: int) -> None:
        """Hook: row ``row`` was just written (prioritized buffers set its priorities)."""

    def _cleared(self, row: int) -> None:
        """Hook: row ``row`` no longer holds transitions."""

    # -- sampling -----------------------------------------------------------------------------
    def _filled(self) -> int:
        """Number of flat slots that may hold a transition."""
        return (self.length if self.full else self.pos) * self.n_envs

    def sample_indices(self, batch_size: int) -> np.ndarray:
        """Flat indices of ``batch_size`` valid transitions, drawn uniformly with replacement."""
        if self.count == 0:
            raise CanterError("cannot sample from an empty replay buffer")
        high = self._filled()
        idx = self.rng.integers(0, high, size=batch_size)
        bad = ~self._valid[idx]
        rounds = 0
        while bad.any():
            if rounds == _MAX_REJECTION_ROUNDS:  # very sparse buffer: draw from the valid slots directly
                choices = np.flatnonzero(self._valid[:high])
                idx[bad] = choices[self.rng.integers(0, len(choices), size=int(bad.sum()))]
                break
            idx[bad] = self.rng.integers(0, high, size=int(bad.sum()))
            bad = ~self._valid[idx]
            rounds += 1
        return idx

    def sample(self, batch_size: int) -> ReplayBatch:
        """Draw ``batch_size`` transitions uniformly (with replacement)."""
        check_batch_size(batch_size)
        return self.transitions(self.sample_indices(batch_size))

    def transitions(self, idx: np.ndarray, weights: np.ndarray | None = None) -> ReplayBatch:
        """The (n-step) transitions starting at flat indices ``idx``."""
        n, length = self.n_envs, self.length
        row, env = np.divmod(idx, n)
        if self.n_step == 1:
            last_row, last = row, idx
            rewards = self._step_rewards(idx).astype(np.float32, copy=False)
            discounts = np.full(len(idx), self.gamma, dtype=np.float32)
        else:
            rows = (row[:, None] + np.arange(self.n_step)) % length  # [B, n_step]
            flat = rows * n + env[:, None]
            keep = self._valid[flat]
            keep[:, 1:] &= ~self._done[flat[:, :-1]]  # stop after an episode's last step
            keep = np.logical_and.accumulate(keep, axis=1)
            steps = keep.sum(1)
            rewards = (self._step_rewards(flat) * keep * self._powers).sum(1).astype(np.float32)
            last_row = rows[np.arange(len(idx)), steps - 1]
            last = last_row * n + env
            discounts = (self.gamma ** steps).astype(np.float32)
        next_idx = ((last_row + 1) % length) * n + env
        w = torch.ones(len(idx)) if weights is None else torch.from_numpy(weights.astype(np.float32))
        return ReplayBatch(
            torch.from_numpy(self._gather_obs(idx)),
            torch.from_numpy(self._actions[idx]),
            torch.from_numpy(rewards),
            torch.from_numpy(self._gather_obs(next_idx)),
            torch.from_numpy(self._terminated[last].astype(np.float32)),
            torch.from_numpy(discounts),
            w,
            torch.from_numpy(idx),
        )

    def _step_rewards(self, idx: np.ndarray) -> np.ndarray:
        """The stored rewards at flat indices ``idx`` (any shape), through :attr:`reward_transform`."""
        rewards = self._rewards[idx]
        return rewards if self.reward_transform is None else self.reward_transform(rewards)

    def chronological_indices(self) -> np.ndarray:
        """Flat indices of every valid transition, env by env, each env's oldest first."""
        if not self.started:
            return np.zeros(0, dtype=np.int64)
        rows = np.arange(self.length) if self.full else np.arange(self.pos)
        if self.full:  # the oldest row follows the head
            rows = np.roll(rows, -(self.pos + 1))
        idx = rows[None, :] * self.n_envs + np.arange(self.n_envs)[:, None]  # [env, time]
        idx = idx.reshape(-1)
        return idx[self._valid[idx]]

    # -- state --------------------------------------------------------------------------------
    def _rows_used(self) -> int:
        return self.length if self.full else self.pos + 1

    def state_dict(self) -> dict[str, Any]:
        """Arrays (only the rows in use) and JSON-safe scalars, for saving with a checkpoint."""
        rows = self._rows_used()
        state: dict[str, Any] = {key: getattr(self, key)[:rows] for key in self.ARRAYS}
        state.update(
            pos=self.pos, full=self.full, started=self.started, count=self.count, rng=self.rng.bit_generator.state,
            fresh=self._fresh,  # a new_episodes() boundary still to come (a checkpoint before the next add)
            capacity=self.capacity, n_envs=self.n_envs, n_step=self.n_step,
        )
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (into a buffer built with the same settings)."""
        for key in ("capacity", "n_envs"):
            if key in state and int(state[key]) != getattr(self, key):
                raise CanterError(f"replay buffer {key} mismatch: saved {int(state[key])}, this buffer {getattr(self, key)}")
        missing = [key for key in self.ARRAYS if key not in state]
        if missing:  # checked before anything is overwritten (a hindsight buffer given a plain one's file: KeyError)
            raise CanterError(f"the replay buffer was saved by another kind of buffer than this {type(self).__name__}: "
                              f"it holds no {', '.join(missing)}")
        obs = np.asarray(state["obs"])
        if obs.shape[1:] != self.obs.shape[1:] or obs.dtype != self.obs.dtype:
            raise CanterError(
                f"replay buffer observations do not match: saved {obs.shape[1:]} {obs.dtype}, "
                f"this buffer {self.obs.shape[1:]} {self.obs.dtype}"
            )
        actions = np.asarray(state["actions"])
        if actions.shape[2:] != self.actions.shape[2:] or actions.dtype.kind != self.actions.dtype.kind:
            raise CanterError(  # a Discrete run's buffer into a Box run's one was NumPy's broadcast error
                f"replay buffer actions do not match: saved {actions.shape[2:]} {actions.dtype}, "
                f"this buffer {self.actions.shape[2:]} {self.actions.dtype}"
            )
        pos, full, started, count, rng = self._checked_scalars(state)  # before anything is overwritten
        rows = len(obs)
        for key in self.ARRAYS:
            arr = getattr(self, key)
            arr[:] = 0
            arr[:rows] = np.asarray(state[key])
        self.pos, self.full, self.started = pos, full, started
        self._last_next_obs = None
        self._fresh = bool(state.get("fresh", False))  # buffers saved before it was kept: none pending
        self.count = count
        self.rng.bit_generator.state = rng

    def _checked_scalars(self, state: dict[str, Any]) -> tuple[int, bool, bool, int, dict[str, Any]]:
        """``(pos, full, started, count, rng state)`` of a saved state, checked: a hand-edited or damaged one was
        a ValueError or KeyError after the buffer's arrays were replaced (a ``pos`` past the end loaded, and broke
        the next ``add``)."""
        try:
            self._check_own_state(state)
            pos, count = state["pos"], state["count"]
            if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in (pos, count)):
                raise ValueError(f"pos and count must be whole numbers, got {pos!r} and {count!r}")
            if not 0 <= pos < self.length or count < 0:
                raise ValueError(f"pos {pos} is not a row of this buffer (0 to {self.length - 1}) or count {count} "
                                 f"is negative")
            flags = state["full"], state["started"]
            if not all(isinstance(v, (bool, np.bool_)) for v in flags):  # bool('false') was True
                raise ValueError(f"full and started must be true or false, got {flags[0]!r} and {flags[1]!r}")
            if not isinstance(state.get("fresh", False), (bool, np.bool_)):  # bool('false') was True here too
                raise ValueError(f"fresh must be true or false, got {state['fresh']!r}")
            probe = type(self.rng.bit_generator)()
            probe.state = state["rng"]  # what the generator refuses, refused before the buffer changes
            return int(pos), bool(state["full"]), bool(state["started"]), int(count), state["rng"]
        except KeyError as exc:
            raise CanterError(f"the replay buffer's saved state has no {exc}") from None
        except (TypeError, ValueError) as exc:
            raise CanterError(f"the replay buffer's saved state is corrupt: {exc}") from None

    def _check_own_state(self, state: dict[str, Any]) -> None:
        """A subclass's check of its own saved entries (a KeyError, TypeError or ValueError for one missing or
        unfit), run by :meth:`load_state_dict` before anything is overwritten; a plain buffer has none."""

    def save(self, path: str | Path) -> Path:
        """Write the buffer to ``path`` (``.npz``, no pickled objects), atomically."""
        path = Path(path)
        state = self.state_dict()
        arrays = {k: v for k, v in state.items() if isinstance(v, np.ndarray)}
        scalars = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
        with atomic_file(path) as f:
            np.savez(f, **arrays, __meta__=np.array(json.dumps(scalars)))
        return path

    def load(self, path: str | Path) -> None:
        """Restore a buffer written by :meth:`save`."""
        try:
            with np.load(Path(path), allow_pickle=False) as data:
                state: dict[str, Any] = {k: data[k] for k in data.files if k != "__meta__"}
                meta = json.loads(str(data["__meta__"]))
                if not isinstance(meta, dict):
                    raise ValueError(f"its __meta__ is {type(meta).__name__}, not the JSON object buffer.save writes")
                state.update(meta)
        except FileNotFoundError:
            raise CanterError(f"replay buffer file not found: {path}") from None
        except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as exc:
            # a truncated or empty file was zipfile's BadZipFile or NumPy's EOFError, as a traceback
            raise CanterError(f"cannot read replay buffer file {path}: {exc or type(exc).__name__}") from None
        try:
            self.load_state_dict(state)
        except CanterError as exc:
            raise CanterError(f"replay buffer file {path}: {exc}") from None
