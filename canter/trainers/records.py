"""What a trainer yields: one :class:`TrainRecord` per iteration, with the :class:`EpisodeInfo` of every
training episode that ended in it (typed training statistics, as loggers and user loops read them)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from canter.errors import CanterError
from canter.trainers.evaluation import EvalResult


@dataclass(frozen=True)
class EpisodeInfo:
    """A finished training episode.

    Attributes:
        step: the run's env step count (summed over the env copies) when the episode ended.
        wall_time: seconds of training when it ended (as :attr:`TrainRecord.wall_time`).
        episode_return: its undiscounted return (the env's rewards, before any reward normalisation).
        episode_length: its number of env steps.
        rolling_return: the mean return of the last ``reward_window`` training episodes, this one included.
        agent: multi-agent runs: the agent whose episode this was (None otherwise).
        policy: runs with several policies: that agent's policy (None otherwise).
    """

    step: int
    wall_time: float
    episode_return: float
    episode_length: int
    rolling_return: float
    agent: str | None = None
    policy: str | None = None


@dataclass
class TrainRecord:
    """One log record, yielded by a trainer after each iteration (every ``log_every`` iterations, and at each
    evaluation, due checkpoint and the run's end).

    Attributes:
        step: env steps so far, summed over the env copies (a resumed run's count goes on from its checkpoint's); an
            offline run (BC, CQL, TD3+BC) steps no env: its gradient updates, which its ``max_steps`` counts.
        iteration: iterations so far (an on-policy rollout and its update; an off-policy phase of ``train_freq``
            steps and its gradient steps; an offline run's ``gradient_steps`` updates).
        wall_time: seconds of training so far (a resumed run's include those before; pauses between
            ``trainer()`` calls are not counted).
        steps_per_second: env steps per second since the previous record (an offline run's: updates per second).
        episodes: the training episodes that ended since the previous record (:class:`EpisodeInfo`).
        rolling_return: the mean return of the last ``reward_window`` training episodes (None before the first).
        losses: the iteration's update statistics by name (PPO's ``policy_loss``, ``approx_kl``, ...; an ``after_update``
            hook's ``custom/...``), as numbers ({} where nothing was learned, or for a ``stop_only`` record).
        evaluation: this record's evaluation (:class:`EvalResult`), or None where none was due.
        best_eval_return: the best evaluation mean return so far (None before the first evaluation).
        new_best: whether ``evaluation`` is a new best (a run directory saves ``checkpoints/best``).
        done: whether this is the last record: the run stopped, for ``stop_reason``.
        stop_reason: why it stopped (``max_steps``, ``max_seconds``, ``target_reward``, ``early_stopping``, a
            callback's reason, ``interrupted``, ...), where ``done``; else None.
        best_rolling_return: the best ``rolling_return`` so far (None before the first episode).
        success_rate: the fraction of the last ``reward_window`` training episodes whose env reported
            ``info["is_success"]`` true at their end (None where the env reports no success).
        stop_only: yielded only because a stop signal (Ctrl-C, SIGTERM) came between two logged iterations
            (``log_every`` > 1): its losses are left out, and no logger writes its per-record scalars.
    """

    step: int
    iteration: int
    wall_time: float
    steps_per_second: float
    episodes: list[EpisodeInfo] = field(default_factory=list)
    rolling_return: float | None = None
    losses: dict[str, float] = field(default_factory=dict)
    evaluation: EvalResult | None = None
    best_eval_return: float | None = None
    new_best: bool = False
    done: bool = False
    stop_reason: str | None = None
    best_rolling_return: float | None = None
    success_rate: float | None = None
    stop_only: bool = False


#: the columns updates.parquet has of its own, which a statistic of the same name replaced in every row (a ``learn``
#: reporting ``{"step": ...}`` wrote its value as each row's step)
OWN_COLUMNS = ("step", "wall_time", "steps_per_second")


def check_stat_name(key: str, who: str) -> None:
    """Refuse in one line a statistic named as one of updates.parquet's own columns (:data:`OWN_COLUMNS`)."""
    if key in OWN_COLUMNS:
        raise CanterError(f"{who} reported losses[{key!r}]: '{key}' is a column updates.parquet has of its own "
                          f"({', '.join(OWN_COLUMNS)}); give the statistic another name, e.g. 'n_{key}'")


def is_number(value: Any) -> bool:
    """Whether ``value`` is logged as a number (an int, float or bool; not a string, nor an array of any size):
    updates.parquet, TensorBoard and W&B take it."""
    try:
        return not isinstance(value, (str, bytes)) and not getattr(value, "ndim", 0) and float(value) is not None
    except (TypeError, ValueError):
        return False


def logged_numbers(losses: dict[str, Any], algo: str) -> dict[str, Any]:
    """``losses`` (an iteration's, from algorithm ``algo``'s ``learn``) with each 0-d torch tensor, 0-d NumPy array and
    NumPy number as Python's number.

    A ``learn`` that reported ``{"loss": loss}`` rather than ``loss.item()`` ended the run in pyarrow's traceback
    writing ``updates.parquet`` (summary.json ``stop_reason: interrupted``), and the divergence guard, which checks
    floats, never saw a NaN in it. Another tensor or NumPy array, even of one value, and anything else that is no
    number (a string, None) are refused in one line (as an ``after_update`` hook's are)."""
    for key, value in losses.items():
        check_stat_name(key, f"algorithm '{algo}'")
        if isinstance(value, (torch.Tensor, np.ndarray)):  # a NumPy array as a tensor: a 0-d one ended the run
            if value.ndim:  # with pyarrow's ArrowInvalid, a longer one was written as a list column
                kind = "tensor" if isinstance(value, torch.Tensor) else "NumPy array"
                raise CanterError(f"algorithm '{algo}' reported losses[{key!r}] as a {kind} of shape "
                                  f"{tuple(value.shape)}: learn() reports numbers (a float, or a 0-d {kind})")
            losses[key] = value.item()
        elif isinstance(value, np.generic):  # a NumPy number as Python's (a np.bool_ among floats: pyarrow's
            losses[key] = value.item()  # ArrowInvalid writing updates.parquet, which ended the run)
        elif not is_number(value):  # a string or None: TensorBoard's float() ended the run in a traceback
            raise CanterError(f"algorithm '{algo}' reported losses[{key!r}] = {value!r:.60}: learn() reports numbers "
                              f"(a float, or a 0-d tensor)")
    return losses
