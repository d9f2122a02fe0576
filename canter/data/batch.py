"""Batches with declared fields (NamedTuples of tensors): what algorithms' ``learn`` receives."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch


def to_device(batch: Any, device: torch.device) -> Any:
    """``batch`` (a tensor, or a NamedTuple / tuple of them, nested) with every tensor on ``device``; other
    fields are kept. Buffers live in host memory: a learner on a GPU gets its batches moved here."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, tuple):
        items = [to_device(x, device) for x in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else tuple(items)
    return batch


def numpy_as_tensors(batch: Any) -> Any:
    """``batch`` (a NumPy array, or a NamedTuple / tuple of them, nested, as :func:`~canter.data.batch.to_device` takes)
    with each NumPy array as a tensor, a floating one as float32 (the dtype the buffers give the algorithms); other
    fields are kept. A read-only array (``np.load(..., mmap_mode="r")``) is copied: torch warned that it does not
    support non-writable tensors."""
    if isinstance(batch, np.ndarray):
        array = np.ascontiguousarray(batch, dtype=np.float32 if batch.dtype.kind == "f" else None)
        return torch.from_numpy(array if array.flags.writeable else array.copy())
    if isinstance(batch, tuple) and any(isinstance(x, (np.ndarray, tuple)) for x in batch):
        items = [numpy_as_tensors(x) for x in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else tuple(items)
    return batch


class RolloutBatch(NamedTuple):
    """A flattened on-policy rollout (only real transitions), advantages already computed."""

    obs: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor


class ReplayBatch(NamedTuple):
    """Transitions sampled from a replay buffer.

    ``discounts`` is gamma**n for the n-step return stored in ``rewards`` (gamma for 1-step);
    ``weights`` are importance weights (ones for uniform sampling) and ``indices`` the buffer
    positions, for priority updates.
    """

    obs: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_obs: torch.Tensor
    terminated: torch.Tensor
    discounts: torch.Tensor
    weights: torch.Tensor
    indices: torch.Tensor


class TrajectoryBatch(NamedTuple):
    """Time-major trajectories ``[T, N]`` with the behaviour policy's log-probs (IMPALA, APPO).

    ``obs`` are preprocessed observations; ``last_obs`` ([N, ...]) follows the last row, for
    bootstrapping. Rows follow the NEXT_STEP convention: ``valid`` is False for autoreset-only
    rows, which stay in place (V-trace needs contiguous sequences) and are masked out of losses.
    """

    obs: torch.Tensor
    actions: torch.Tensor
    behaviour_log_probs: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor
    dones: torch.Tensor
    valid: torch.Tensor
    last_obs: torch.Tensor


class SequenceBatch(NamedTuple):
    """A time-major on-policy rollout ``[T, N]`` for recurrent policies (every row, valid or not, so
    the memory runs through the sequence as it did while acting): ``starts`` marks the steps
    before which an env's memory was zeroed (an episode's first observation), ``state`` is the
    memory at the rollout's start (hidden and cell, ``[1, N, hidden]``), ``valid`` the rows that
    enter the loss."""

    obs: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    valid: torch.Tensor
    starts: torch.Tensor
    state: tuple[torch.Tensor, torch.Tensor]


#: :func:`distinct_draws` gives up when more than this fraction of the draws are distinct (the
#: gathers and the check would then cost about what the repeated rows save)
DISTINCT_MAX_FRACTION = 0.95


def distinct_draws(indices: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """For buffer indices drawn with replacement: ``(first, inverse)`` with ``indices[first]`` each
    distinct index once and ``indices[first][inverse] == indices``; None when nearly all are distinct
    (:data:`DISTINCT_MAX_FRACTION`). A training phase of 128 minibatches of 64 drawn from a buffer
    of N transitions repeats ``1 - N (1 - exp(-8192 / N)) / 8192`` of its rows: 45% at N = 6,000,
    21% on average over a 50k-step CartPole run. O(n), no sort; ``first`` ascending."""
    n = len(indices)
    if n == 0 or indices.min() < 0:
        return None
    seen = np.empty(int(indices.max()) + 1, np.int64)
    seen[indices] = np.arange(n)  # one position per index wins, whichever: all its draws then agree on it
    rep = seen[indices]
    first = np.flatnonzero(rep == np.arange(n))
    if len(first) > DISTINCT_MAX_FRACTION * n:
        return None
    seen[indices[first]] = np.arange(len(first))
    return first, seen[indices]
