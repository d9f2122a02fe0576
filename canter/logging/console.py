"""Live progress in the terminal with rich: steps, steps/s, returns, evaluation, losses."""
from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from canter.trainers.base import TrainRecord

_SHOWN_LOSSES = ("value_loss", "entropy", "loss", "q_mean", "policy_lag")


class ConsoleLogger:
    """A rich progress bar (on stderr) plus one line per evaluation."""

    def __init__(self, total_steps: int, description: str = "train", console: Console | None = None,
                 refresh_seconds: float = 0.25) -> None:
        self.total = total_steps
        self.description = description
        self.console = console or Console(stderr=True)
        self.refresh = refresh_seconds
        self._last = 0.0
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self._eval = "-"

    def start(self, run: Any) -> None:  # noqa: D102
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(bar_width=16),
            TextColumn("{task.completed:,.0f} steps"), TextColumn("{task.fields[sps]} steps/s"),
            TextColumn("return {task.fields[ret]}"), TextColumn("eval {task.fields[eval]}"),
            TextColumn("{task.fields[losses]}"), TimeElapsedColumn(),
            console=self.console, transient=False,
        )
        self.progress.start()
        self.task = self.progress.add_task(self.description, total=self.total, sps="-", ret="-", eval="-", losses="")

    def log(self, record: TrainRecord) -> None:  # noqa: D102
        assert self.progress is not None and self.task is not None
        if record.evaluation is not None:
            ev = record.evaluation
            self._eval = f"{ev.mean_return:.1f}"
            best = " (new best)" if record.new_best else ""
            self.progress.console.log(
                f"step {record.step:,}: eval return {ev.mean_return:.2f} ± {ev.std_return:.2f} over {ev.episodes} episodes{best}"
            )
        now = time.monotonic()
        if now - self._last < self.refresh and not record.done and record.evaluation is None:
            return
        self._last = now
        losses = " ".join(f"{k} {record.losses[k]:.3g}" for k in _SHOWN_LOSSES if k in record.losses)
        ret = "-" if record.rolling_return is None else f"{record.rolling_return:.1f}"
        if record.best_rolling_return is not None:
            ret += f" (best {record.best_rolling_return:.1f})"
        self.progress.update(self.task, completed=min(record.step, self.total), sps=f"{record.steps_per_second:,.0f}",
                             ret=ret, eval=self._eval, losses=losses)

    def close(self) -> None:  # noqa: D102
        if self.progress is not None:
            self.progress.stop()
