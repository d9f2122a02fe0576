"""The built-in callbacks a run config builds: stop criteria (:class:`TargetReward`, :class:`StepBudget`,
:class:`TimeBudget`, :class:`EarlyStopping`) and :class:`PlateauLR`. They are importable from
:mod:`canter.callbacks` too (``callbacks: ["canter.callbacks:EarlyStopping"]`` in YAML)."""
from __future__ import annotations

import math
import numbers
from typing import Any

from canter.callbacks import Callback
from canter.errors import CanterError, unknown


# -- improvement tracking ----------------------------------------------------------------------


def monitored_value(trainer: Any, result: Any, monitor: str) -> float | None:
    """The value early stopping and plateaus watch: the eval mean return or the rolling training return."""
    if monitor == "rolling":
        return trainer.rolling_return()
    return None if result is None else result.mean_return


def _number_in(value: Any, low: float, high: float) -> bool:
    """True for a real number (not a bool) with ``low <= value <= high``; NaN is not."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and low <= value <= high


class Patience(Callback):
    """Counts evaluations since the monitored return last improved by more than ``min_delta``."""

    def __init__(self, patience: int, monitor: str = "eval", min_delta: float = 0.0) -> None:
        # as the run keys early_stopping / plateau_patience and monitor check them (patience 0 stopped
        # after the first iteration, before any evaluation; another monitor watched the eval return)
        if isinstance(patience, bool) or not isinstance(patience, numbers.Integral) or patience < 1:
            raise CanterError(f"{type(self).__name__}: patience must be an int >= 1 (evaluations), got {patience!r}")
        if monitor not in ("eval", "rolling"):
            raise unknown(f"{type(self).__name__} monitor", str(monitor), ("eval", "rolling"))
        if not _number_in(min_delta, 0.0, math.inf):  # the run key min_delta: >= 0
            raise CanterError(f"{type(self).__name__}: min_delta must be a number >= 0, got {min_delta!r}")
        self.patience, self.monitor, self.min_delta = int(patience), monitor, float(min_delta)
        self.best: float | None = None
        self.bad = 0
        #: ``monitor: rolling``: the training episodes counted when the value was last read
        self.episodes_seen: int | None = None

    def value(self, trainer: Any, result: Any) -> float | None:
        """The monitored value of this evaluation, or None where it is nothing new: with ``monitor: rolling``, an
        evaluation after which no training episode has ended since the last one reads the same reward buffer
        again (long episodes, several evaluations each), which must not use up the patience."""
        value = monitored_value(trainer, result, self.monitor)
        if self.monitor == "rolling":
            episodes = getattr(trainer, "episode_count", None)
            if episodes is not None and episodes == self.episodes_seen:
                return None
            self.episodes_seen = episodes
        return value

    def update(self, value: float | None) -> bool:
        """Fold in one evaluation; True if it improved. A NaN or infinite value (a diverged policy) is an
        evaluation without improvement; None (no training episode yet, ``monitor: rolling``) is not counted."""
        if value is None:
            return False
        if math.isfinite(value) and (self.best is None or value > self.best + self.min_delta):
            self.best, self.bad = value, 0
            return True
        self.bad += 1
        return False

    def state_dict(self) -> dict[str, Any]:  # noqa: D102
        return {"best": self.best, "bad": self.bad, "episodes_seen": self.episodes_seen}

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: D102
        self.best, self.bad = state.get("best"), int(state.get("bad", 0))
        seen = state.get("episodes_seen")  # (a checkpoint before 2026-11-28 has none: the next reading counts)
        self.episodes_seen = None if seen is None else int(seen)


class EarlyStopping(Patience):
    """Stop after ``patience`` evaluations without improvement (reason ``early_stopping``)."""

    def on_evaluate(self, trainer: Any, result: Any) -> None:  # noqa: D102
        self.update(self.value(trainer, result))

    def should_stop(self, trainer: Any) -> str | None:  # noqa: D102
        return "early_stopping" if self.bad >= self.patience else None


class PlateauLR(Patience):
    """Multiply every learning rate by ``factor`` after ``patience`` evaluations without improvement; once every
    rate is at ``min_lr`` there is nothing to lower, and none is made (nor counted in ``reductions``) while so."""

    def __init__(self, patience: int, factor: float = 0.5, monitor: str = "eval", min_delta: float = 0.0) -> None:
        super().__init__(patience, monitor, min_delta)
        if not _number_in(factor, 0.0, 1.0) or factor == 0:  # the run key plateau_factor: in (0, 1]
            raise CanterError(f"PlateauLR: factor must be a number in (0, 1], got {factor!r} (a factor above 1 "
                              "would raise the learning rate at every plateau)")
        self.factor = float(factor)
        self.reductions: list[int] = []

    def on_evaluate(self, trainer: Any, result: Any) -> None:  # noqa: D102
        self.update(self.value(trainer, result))
        if self.bad >= self.patience:
            floored = getattr(trainer.lr, "at_min_lr", None)
            if floored is not None and floored():  # every rate at min_lr: the count goes on, as Keras's
                return
            self.bad = 0
            trainer.lr.reduce(self.factor)
            self.reductions.append(trainer.step)

    def state_dict(self) -> dict[str, Any]:  # noqa: D102
        return {**super().state_dict(), "reductions": list(self.reductions)}

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: D102
        super().load_state_dict(state)
        self.reductions = [int(s) for s in state.get("reductions", [])]


# -- budgets -------------------------------------------------------------------------------------


class TargetReward(Callback):
    """Stop when an evaluation's mean return reaches ``target`` (reason ``target_reward``)."""

    def __init__(self, target: float) -> None:
        try:
            value = float(target)
        except (TypeError, ValueError):
            raise CanterError(f"TargetReward's target must be a number, got {target!r}") from None
        if not math.isfinite(value):  # NaN is never reached, inf never, -inf at once: no target at all
            raise CanterError(f"TargetReward's target must be a finite number, got {target!r}")
        self.target = value
        self.reached = False

    def on_evaluate(self, trainer: Any, result: Any) -> None:  # noqa: D102
        self.reached = self.reached or result.mean_return >= self.target

    def should_stop(self, trainer: Any) -> str | None:  # noqa: D102
        return "target_reward" if self.reached else None

    def state_dict(self) -> dict[str, Any]:  # noqa: D102
        return {"reached": self.reached}

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: D102
        self.reached = bool(state.get("reached", False))


class StepBudget(Callback):
    """Stop once ``trainer.step`` reaches ``trainer.run.max_steps`` (reason ``max_steps``)."""

    def should_stop(self, trainer: Any) -> str | None:  # noqa: D102
        return "max_steps" if trainer.step >= trainer.run.max_steps else None


class TimeBudget(Callback):
    """Stop once the training wall time reaches ``trainer.max_seconds`` (reason ``max_seconds``)."""

    def should_stop(self, trainer: Any) -> str | None:  # noqa: D102
        limit = trainer.max_seconds
        return "max_seconds" if limit is not None and trainer.wall_time() >= limit else None


# -- building from a run config ------------------------------------------------------------------


def builtin_callbacks(run: Any) -> list[Callback]:
    """The stop criteria and LR plateau callback a run config asks for, in stop-reason order."""
    cbs: list[Callback] = []
    if run.target_reward is not None:
        cbs.append(TargetReward(run.target_reward))
    cbs += [StepBudget(), TimeBudget()]
    if run.early_stopping is not None:
        cbs.append(EarlyStopping(run.early_stopping, run.monitor, run.min_delta))
    if run.plateau_patience is not None:
        cbs.append(PlateauLR(run.plateau_patience, run.plateau_factor, run.monitor, run.min_delta))
    return cbs
