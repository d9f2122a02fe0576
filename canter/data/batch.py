"""Batches with declared fields (NamedTuples of tensors): what algorithms' ``learn`` receives."""
from __future__ import annotations

from typing import Any, NamedTuple

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
