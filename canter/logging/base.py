"""The Logger protocol."""
from __future__ import annotations

from typing import Any, Protocol

from canter.trainers.base import TrainRecord


class Logger(Protocol):
    """Receives every record a trainer yields."""

    def start(self, run: Any) -> None:
        """Called once before training, with the :class:`~canter.run.Run`."""

    def log(self, record: TrainRecord) -> None:
        """Called for every record."""

    def close(self) -> None:
        """Called once at the end (also after an error or Ctrl-C)."""


def scalars(record: TrainRecord) -> dict[str, float]:
    """The record's per-iteration scalars under their stable names."""
    out = {"charts/steps_per_second": record.steps_per_second}
    if record.rolling_return is not None:
        out["charts/rolling_return"] = record.rolling_return
    if record.success_rate is not None:
        out["charts/success_rate"] = record.success_rate
    for k, v in record.losses.items():
        out[f"losses/{k}"] = v
    if record.evaluation is not None:
        out["eval/mean_return"] = record.evaluation.mean_return
        out["eval/std_return"] = record.evaluation.std_return
        if record.evaluation.success_rate is not None:
            out["eval/success_rate"] = record.evaluation.success_rate
    return out


def made_by_stop(record: TrainRecord) -> bool:
    """Whether only a stop signal made ``record`` (:attr:`TrainRecord.stop_only`): a Ctrl-C / SIGTERM between two
    logged iterations (``log_every`` > 1). Its episodes are the run's, but its per-record scalars (steps/s, the
    rolling return) are no points of the uninterrupted run, which a resumed run continues."""
    return record.stop_only
