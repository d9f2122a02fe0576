"""Live progress in the terminal with rich: steps, steps/s, returns, evaluation, losses."""
from __future__ import annotations

import errno
import sys
import time
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.progress import BarColumn, Progress, Task, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from canter.callbacks import Callback
from canter.trainers.base import TrainRecord

#: the statistics the status line shows, where the algorithm reports them (PPO kin: value_loss and entropy;
#: DQN kin: loss and q_mean; SAC, TD3, DDPG, TQC, ACER: critic_loss)
_SHOWN_LOSSES = ("value_loss", "critic_loss", "entropy", "loss", "q_mean", "policy_lag")


def shown_losses(losses: dict[str, float]) -> list[str]:
    """The keys of ``losses`` the status line shows, in ``_SHOWN_LOSSES``' order; a multi-policy run's
    ``policy/name`` keys by policy, each policy's in that order."""
    keys = [k for k in _SHOWN_LOSSES if k in losses]
    policies = dict.fromkeys(k.split("/", 1)[0] for k in losses if "/" in k)
    keys += [f"{p}/{k}" for p in policies for k in _SHOWN_LOSSES if f"{p}/{k}" in losses]
    return keys


class _RunClock(TimeElapsedColumn):
    """Rich's elapsed-time column, counted from ``offset`` seconds (a resumed run's clock goes on)."""

    def __init__(self, offset: float = 0.0) -> None:
        super().__init__()
        self.offset = offset

    def render(self, task: Any) -> Text:  # noqa: D102
        elapsed = task.finished_time if task.finished else task.elapsed
        if elapsed is None:
            return Text("-:--:--", style="progress.elapsed")
        return Text(str(timedelta(seconds=max(0, int(elapsed + self.offset)))), style="progress.elapsed")


def status_fields(task: Task) -> list[str]:
    """The status of ``task`` (a :class:`ConsoleLogger`'s) as its whole pieces: steps, steps/s, return, eval and
    each shown statistic."""
    f = task.fields
    return [f"{f['steps']} steps", f"{f['sps']} steps/s", f"return {f['ret']}", f"eval {f['eval']}",
            *f.get("loss_items", ())]


def pack(fields: list[str], width: int) -> list[str]:
    """``fields`` joined by two spaces into lines of at most ``width`` cells, none split (one wider than ``width``
    alone on its line)."""
    lines: list[str] = []
    for field in fields:
        if lines and cell_len(lines[-1]) + 2 + cell_len(field) <= width:
            lines[-1] += "  " + field
        else:
            lines.append(field)
    return lines


class _FittingProgress(Progress):
    """rich's progress display, its one line per task kept whole where the terminal is too narrow for it. rich
    cut every column of that line to fit: in an 80-column terminal a CartPole run's last line read
    'ppo CartP… 3,072… avg 5,193 s… return 28.8 (best… eva… value_loss 60.1 entropy…' (no bar, no clock, no
    evaluation). There each task takes two or more lines instead: its name, bar (from 40 columns) and clock, then
    its status, whole pieces packed into lines of the terminal's width."""

    def get_renderables(self) -> Iterable[RenderableType]:  # noqa: D102
        table = self.make_tasks_table(self.tasks)
        if getattr(self, "live", None) is None:  # (rich asks once while it builds the display, before any task)
            yield table
            return
        width = self.console.width
        unbounded = self.console.options.update(width=10_000)  # (a measure within the width says it fits)
        if Measurement.get(self.console, unbounded, table).maximum <= width:
            yield table
            return
        bar = next((c for c in self.columns if isinstance(c, BarColumn)), None)
        clock = self.columns[-1]
        for task in self.tasks:
            if not task.visible:
                continue
            head = Table.grid(padding=(0, 1))
            head.add_column(overflow="fold")
            cells: list[RenderableType] = [Text(task.description, style="bold")]
            if bar is not None and width >= 40:
                head.add_column(no_wrap=True)
                cells.append(bar(task))
            if isinstance(clock, TimeElapsedColumn):
                head.add_column(no_wrap=True)
                cells.append(clock(task))
            head.add_row(*cells)
            yield head
            yield Text("\n".join(pack(status_fields(task), width)), overflow="fold")


def _stdout_is_a_terminal() -> bool:
    """Whether stdout is a terminal, where a print (a hook's) would break into the live display, which rich then
    takes into its console (on stderr). rich took it there from any stdout: with ``canter train ... > out.txt``
    in a terminal a hook's prints went to the terminal, not to ``out.txt``."""
    try:
        return sys.stdout is not None and sys.stdout.isatty()
    except (AttributeError, ValueError):  # a stdout replaced by an object without isatty, or closed
        return False


class _StderrConsole(Console):
    """rich's console on stderr, going quiet when stderr is gone (a pipe whose reader ended: ``canter train ... |
    tee log`` after a Ctrl-C or a closed terminal ended ``tee``). rich's own answer was SystemExit(1) out of the
    progress line, after pointing stdout (not stderr) at /dev/null: the run ended with exit code 1."""

    def on_broken_pipe(self) -> None:  # noqa: D102
        self.quiet = True

    def _check_buffer(self) -> None:
        """rich's write, going quiet as on a broken pipe where stderr was closed before the process started
        (``canter train ... 2>&-``: EBADF) or its terminal is gone (EIO), which ended the run at its first line
        with the OSError (exit code 1, its summary 'interrupted')."""
        try:
            super()._check_buffer()
        except OSError as exc:
            if exc.errno not in (errno.EBADF, errno.EIO):
                raise
            del self._buffer[:]
            self.quiet = True


class _LastEvaluation(Callback):
    """Shows a resumed run's last evaluation (restored when training starts) until its next one; the status
    read 'eval -', as though the run had never evaluated, for up to ``eval_every`` steps (not part of the hook
    state)."""

    internal = True

    def __init__(self, logger: ConsoleLogger) -> None:
        self.logger = logger

    def on_train_start(self, trainer: Any) -> None:  # noqa: D102
        last = getattr(trainer, "last_eval", None)
        if last is not None:
            self.logger._eval = f"{last.mean_return:.1f}"
            if self.logger.progress is not None and self.logger.task is not None:
                self.logger.progress.update(self.logger.task, eval=self.logger._eval)


class ConsoleLogger:
    """A rich progress bar (on stderr) plus one line per evaluation.

    When stderr is not a terminal (a pipe, a log file, CI) or is one that cannot move the cursor
    (``TERM=dumb``), a live bar would only be printed once, cut to 80 columns; there the logger writes
    whole plain lines instead: one per evaluation and a status line every ``plain_seconds`` and at the end.

    While training, steps/s is recent: the last record's rate on the bar, the rate since the previous line
    in plain lines. The final line gives the average since training started in this process
    (``avg N steps/s``: its steps over its training seconds, a resumed run's from its checkpoint on).

    A terminal too narrow for the bar's one line gets it on two or more (:class:`_FittingProgress`).
    """

    def __init__(self, total_steps: int, description: str = "train", console: Console | None = None,
                 refresh_seconds: float = 0.25, plain_seconds: float = 10.0) -> None:
        self.total = total_steps
        self.description = description
        # log_path off: each evaluation line ended with canter's own source position ('console.py:116')
        self.console = console or _StderrConsole(stderr=True, log_path=False)
        # is_interactive: a terminal that is not dumb (rich redraws a live display only there)
        self.plain = not (self.console.is_interactive or self.console.is_jupyter)
        self.refresh = plain_seconds if self.plain else refresh_seconds
        self._last = self._start = self._line_time = time.monotonic()
        self._line_step = 0  # plain mode: step and time of the last status line
        self._first_step, self._first_wall = 0, 0.0  # where this process's training started: its average
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self._eval = "-"

    def _line(self, text: str) -> None:
        """One whole line (plain mode): elapsed time first, never wrapped or cut."""
        self.console.print(f"[{time.monotonic() - self._start:7.1f}s] {text}", soft_wrap=True, markup=False,
                           highlight=False)

    def start(self, run: Any) -> None:
        """Open the progress display for ``run``."""
        self._last = self._line_time = time.monotonic()
        self._start = self._last - getattr(run, "resumed_wall", 0.0)  # a resumed run's clock goes on
        self._line_step = getattr(run, "resumed_step", None) or 0  # steps/s counts this process's steps
        self._first_step, self._first_wall = self._line_step, getattr(run, "resumed_wall", 0.0)
        trainer = getattr(run, "trainer", run)
        if not getattr(trainer, "evaluates", True):  # eval_episodes 0: no evaluation comes
            self._eval = "off"
        hooks = getattr(trainer, "hooks", None)
        if hooks is not None:  # a resumed run's last evaluation is restored when training starts
            hooks.add(_LastEvaluation(self))
        if self.plain:
            return
        self.progress = _FittingProgress(
            TextColumn("[bold]{task.description}"), BarColumn(bar_width=16),
            TextColumn("{task.fields[steps]} steps"), TextColumn("{task.fields[sps]} steps/s"),
            TextColumn("return {task.fields[ret]}"), TextColumn("eval {task.fields[eval]}"),
            TextColumn("{task.fields[losses]}"), _RunClock(getattr(run, "resumed_wall", 0.0)),
            console=self.console, transient=False, redirect_stdout=_stdout_is_a_terminal(),
        )
        self.progress.start()
        self.task = self.progress.add_task(self.description, total=self.total,
                                           completed=min(self._line_step, self.total), steps=f"{self._line_step:,}",
                                           sps="-", ret="-", eval=self._eval, losses="",
                                           loss_items=[])

    def log(self, record: TrainRecord) -> None:
        """Update the progress display (and print a line when due) from ``record``."""
        if record.evaluation is not None:
            ev = record.evaluation
            self._eval = f"{ev.mean_return:.1f}"
            best = " (new best)" if record.new_best else ""
            line = f"step {record.step:,}: eval return {ev.describe()}{best}"
            if self.plain:
                self._line(line)
            else:
                assert self.progress is not None
                self.progress.console.log(line)
        now = time.monotonic()
        if self.plain:  # a status line every `refresh` seconds since the last one (evaluation lines aside)
            due = now - self._line_time >= self.refresh
        else:
            due = now - self._last >= self.refresh or record.evaluation is not None
        if not due and not record.done:
            return
        self._last = now
        loss_items = [f"{k} {record.losses[k]:.3g}" for k in shown_losses(record.losses)]
        losses = " ".join(loss_items)
        ret = "-" if record.rolling_return is None else f"{record.rolling_return:.1f}"
        if record.best_rolling_return is not None:
            ret += f" (best {record.best_rolling_return:.1f})"
        sps = f"{record.steps_per_second:,.0f}"
        if record.done:  # the run's average, not its last iteration's rate (an evaluation in it, say)
            seconds = record.wall_time - self._first_wall
            sps = "avg " + ("-" if seconds <= 0 else f"{(record.step - self._first_step) / seconds:,.0f}")
        elif self.plain:
            # the rate since the last status line (a record's own rate covers one iteration,
            # and an evaluation in it)
            sps = f"{(record.step - self._line_step) / max(now - self._line_time, 1e-9):,.0f}"
        if self.plain:
            self._line_step, self._line_time = record.step, now
            # the steps taken: a run ends on a whole iteration, which may pass max_steps (3,072/3,000)
            self._line(f"{self.description}: {record.step:,}/{self.total:,} steps, {sps} steps/s, "
                       f"return {ret}, eval {self._eval}" + (f", {losses}" if losses else ""))
            return
        assert self.progress is not None and self.task is not None
        # the bar stops full; the text gives the steps taken (a run ends on a whole iteration, past max_steps)
        self.progress.update(self.task, completed=min(record.step, self.total), steps=f"{record.step:,}", sps=sps,
                             ret=ret, eval=self._eval, losses=losses, loss_items=loss_items)

    def close(self) -> None:
        """Stop the progress display."""
        if self.progress is not None:
            self.progress.stop()
