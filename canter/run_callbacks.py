"""The parts of :class:`canter.run.Run` that its trainer's hooks call (saving ``last`` when training starts and
``best`` on a new best evaluation) and the helpers that keep ``summary.json`` one-line and valid JSON."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from canter.callbacks import Callback

if TYPE_CHECKING:
    from canter.run import Run


def _one_line(exc: BaseException) -> str:
    """``"Type: message"`` of ``exc``, its first line (the type alone for an empty message), for ``summary.json``."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__


def _finite_or_null(value: Any) -> Any:
    """``value`` with every NaN or infinite float (in dicts and lists too) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite_or_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_null(v) for v in value]
    return value


class _SaveAtStart(Callback):
    """Saves the resumable ``last`` checkpoint when a fresh run starts (not part of the hook state)."""

    internal = True

    def __init__(self, run: Run) -> None:
        self.run = run

    def on_train_start(self, trainer: Any) -> None:  # noqa: D102
        self.run._remember_counters()  # a run that diverges before its first record reports these
        if self.run.resumed_step is None:
            self.run.save_resumable()
        else:  # the resumed run's settings (a new max_steps...) replace the file once it has started
            self.run.write_config()
            # the summary said how the earlier part ended (finished, for a run extended now): until this one ends
            # it says what a kill would leave, a run interrupted at the checkpoint (as a Ctrl-C there writes it)
            self.run._write_summary("interrupted", self.run._good)


class _SaveBest(Callback):
    """Saves ``best`` on a new best evaluation, before the other ``on_best`` hooks run, so that they find
    it written (as Stable-Baselines3's ``callback_on_new_best`` does); not part of the hook state."""

    internal = True

    def __init__(self, run: Run) -> None:
        self.run = run

    def on_best(self, trainer: Any, result: Any) -> None:  # noqa: D102
        self.run.save("best")
