"""A run directory around a trainer: config, loggers, checkpoints (best/last/periodic), summary.

``Run(trainer, run_dir, config)()`` yields exactly the trainer's records while writing::

    RUN_DIR/config.yaml            fully resolved config
    RUN_DIR/history.parquet        one row per finished training episode
    RUN_DIR/updates.parquet        update statistics; evaluations.parquet: evaluations
    RUN_DIR/events.out.tfevents.*  TensorBoard
    RUN_DIR/checkpoints/           best, last, step-000050000 (.safetensors + .json; keep_checkpoints: K keeps
                                   the newest K step-N, :mod:`canter.checkpoint_keep`)
    RUN_DIR/summary.json           written at the end (also after Ctrl-C; 'interrupted' while a resumed run trains)

``last`` is the resumable checkpoint: agent, trainer state (RNGs, env state, counters, replay
buffer) and the number of history rows written so far. It is saved when training starts, every
``checkpoint_every`` steps and at the end, always between two iterations, after the history
files were flushed, so ``--resume`` continues from a consistent point and trims the history
files to the rows that point had. A first Ctrl-C (or SIGTERM) stops after the current iteration
and saves ``last``; a second one, or an iteration still under way 5 s later (or 3 of the run's longest
iterations, where longer: :mod:`canter.stop_grace`),
exits at once, keeping the previous ``last``.
"""
from __future__ import annotations

import atexit
import json
import os
import shlex
import shutil
import sys
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from canter.atomic import atomic_write, remove_temp_files
from canter.checkpoint import save_checkpoint
from canter.checkpoint_keep import periodic_checkpoints, prune_periodic
from canter.errors import CanterError, CanterWarning, notice, warn
from canter.run_callbacks import _SaveAtStart, _SaveBest, _finite_or_null, _one_line
from canter.run_dirs import outermost_missing
from canter.run_lock import LOCK_NAME, acquire, release
from canter.run_meta import agent_metadata, provenance_comment, run_metadata  # noqa: F401 (re-exported: canter.run.run_metadata)
from canter.stop_grace import (
    STOP_GRACE_SECONDS, give_back_stop_handlers, grace_seconds, install_stop_handlers, sigterm_as_ctrl_c, start_grace)
from canter.trainers.base import Trainer, TrainRecord
from canter.trainers.guard import TrainingDiverged
from canter.utils import provenance
from canter.yaml_io import dump_yaml


class Run:
    """Wraps a trainer's generator with the run directory's loggers and checkpoints."""

    def __init__(self, trainer: Trainer, run_dir: str | Path, config: dict[str, Any], loggers: list[Any] = (),
                 checkpoint_every: int = 0, resumed: dict[str, Any] | None = None) -> None:
        self.trainer = trainer
        self.dir = Path(run_dir)
        self.config = config
        trainer.resolved_config, trainer.agent.run_dir = config, self.dir  # a resumed run's too (agent.save reads it)
        self.loggers = list(loggers)
        self.checkpoint_every = checkpoint_every
        #: how many periodic checkpoints to keep (``config``'s ``keep_checkpoints``; None: all)
        self.keep_checkpoints: int | None = config.get("keep_checkpoints")
        self.summary: dict[str, Any] | None = None
        #: whether a Ctrl-C or SIGTERM came while the loggers closed, after the run's end was saved (:meth:`_finish`)
        self.interrupted_closing = False
        self.last_record: TrainRecord | None = None
        #: when resuming: the step of the checkpoint and the history rows it had
        self.resumed_step: int | None = None if resumed is None else int(resumed["step"])
        #: ... and its training seconds so far (the console's clock goes on from them)
        self.resumed_wall: float = 0.0 if resumed is None else float(resumed.get("trainer", {}).get("wall_time", 0.0))
        self.history_rows: dict[str, int] | None = None if resumed is None else resumed.get("history_rows")
        #: the step at which the next periodic checkpoint is due (saved with ``last``; None: none due)
        self.next_checkpoint: int | None = (
            None if resumed is None or resumed.get("next_checkpoint") is None else int(resumed["next_checkpoint"]))
        self.resumes = 0 if resumed is None else int(resumed.get("resumes", 0)) + 1
        self.divergence: TrainingDiverged | None = None
        #: the error that ended the run, ``"Type: message"`` (a hook or logger raised), for ``summary.json``
        self.error: str | None = None
        #: why training ended (``max_steps``, ``interrupted``...), once ``last`` was saved at its end; None before
        self.stop_reason: str | None = None
        self._signals = 0
        self._abort = False
        self._cancel_grace: Any = None  # stops the grace timer of a first stop signal (canter/stop_grace.py)
        self._grace = STOP_GRACE_SECONDS  # its length: longer once the run has had long iterations
        self._longest_iteration = 0.0  # seconds, of this process's iterations
        self._called = False
        #: whether this Run has saved a resumable ``last`` (a new run's first is saved when training starts)
        self._saved_last = False
        self._saved_reason: str | None = None  # the stop reason of the 'last' saved (before its on_checkpoint hooks)
        self._gen: weakref.ref | None = None  # the generator of __call__, for close()
        #: counters as of the last record (or the start), for the summary of a diverged run
        self._good: dict[str, Any] = {}
        #: the outermost directory of ``run_dir``'s path that did not exist before this run (None: it
        #: existed), so a run that fails before training removes what it made, not an empty one it was given
        self.made_dir: Path | None = outermost_missing(self.dir)
        #: a new run's frozen opponents, staged (``canter.envs.opponents.Snapshots``), written when it starts; and
        #: each one's snapshot in the run directory (spec -> ``opponents/NAME``), which ``summary.json`` lists
        self.snapshots: Any = None
        self.opponent_snapshots: dict[str, str] = {}
        trainer.hooks.add(_SaveAtStart(self))
        trainer.hooks.add(_SaveBest(self), first=True)

    @property
    def agent(self) -> Any:
        """The trained agent."""
        return self.trainer.agent

    def __getattr__(self, name: str) -> Any:
        """The trainer's attributes (``step``, ``episode_count``, ``last_eval``, ``run``...), as without ``run_dir``."""
        if "trainer" not in self.__dict__ or name.startswith("_"):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return getattr(self.__dict__["trainer"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        """``run.stop_requested = reason`` asks the trainer (it was kept by the Run, which no trainer reads)."""
        object.__setattr__(self.trainer if name == "stop_requested" else self, name, value)

    def close(self) -> None:
        """Finish a loop over this run that was left early (``break``): save ``last`` and the
        summary as a Ctrl-C would, close the loggers, give back the signal handlers and the
        directory's lock; then close the trainer's envs."""
        gen = self._gen() if self._gen is not None else None
        if gen is not None and gen.gi_running:
            # called from inside the running loop (a callback): stop after this iteration and save, as a
            # first Ctrl-C does; the envs stay open for the iteration under way (the loop's owner closes them)
            self.trainer.stop_requested = "interrupted"
            return
        try:
            if gen is not None:
                gen.close()
        finally:  # the envs (subprocesses) are closed even when saving the run failed
            self.trainer.close()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def metadata(self) -> dict[str, Any]:
        """Checkpoint metadata: what produced it and for which spaces."""
        return run_metadata(self.trainer, self.config)

    def save_agent(self, path: Any) -> Any:
        """:meth:`Trainer.save_agent <canter.trainers.Trainer.save_agent>` with this run's metadata (any path)."""
        return self.trainer.save_agent(path)

    def save(self, name: str) -> Path:
        """Save the agent as checkpoint ``name`` under ``checkpoints/`` (for loading, not resuming)."""
        if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or os.sep in name:
            raise CanterError(f"a checkpoint name is a plain file name such as 'best' or 'step-1000', got {name!r}")
        if name == "last":  # an agent-only 'last' replaced the resumable one: the run could not be resumed
            raise CanterError(f"checkpoints/last of '{self.dir}' is the run's resumable checkpoint, which the run "
                              f"saves itself (save_resumable(), between iterations); give save() another name")
        state = {"agent": self.trainer.agent.state_dict()}
        path = save_checkpoint(self.dir / "checkpoints" / name, state, self.metadata())
        self.trainer.hooks.call("on_checkpoint", self.trainer, path)
        return path

    def save_resumable(self, name: str = "last", stop_reason: str | None = None) -> Path:
        """Flush the history, then save agent + trainer state (call only between iterations).

        ``stop_reason`` None records the run's own: :attr:`stop_reason` once training has ended (a call
        after the loop keeps why it ended, which ``--resume`` reads), else None (training goes on).
        Refused after a divergence: ``last`` holds the last good state, which the diverged one would replace."""
        if self.divergence is not None:
            raise CanterError(f"cannot save a resumable checkpoint: {self.divergence}; the last good state is "
                              f"{self.dir / 'checkpoints' / 'last'} (canter train --resume {shlex.quote(str(self.dir))} continues from it)")
        stop_reason = self.stop_reason if stop_reason is None else stop_reason
        rows = {}
        for lg in self.loggers:
            if hasattr(lg, "rows"):
                lg.flush()
                rows = lg.rows()
        state = {"agent": self.trainer.agent.state_dict(), "trainer": self.trainer.resume_state()}
        meta = {**self.metadata(), "resumable": True, "history_rows": rows, "resumes": self.resumes,
                "next_checkpoint": self.next_checkpoint,
                "env_state_saved": state["trainer"]["env"] is not None, "stop_reason": stop_reason}
        path = save_checkpoint(self.dir / "checkpoints" / name, state, meta)
        self._saved_last = True
        self._saved_reason = stop_reason  # (an on_checkpoint hook raising now leaves it saved)
        self.trainer.hooks.call("on_checkpoint", self.trainer, path)
        return path

    def _remember_counters(self) -> None:
        """Keep the counters the summary reports, as of now (between iterations)."""
        t = self.trainer
        self._good = {
            "steps": t.step, "episodes": t.episode_count, "updates": t.algorithm.updates,
            "best_eval_return": t.best_eval_return,
            "last_eval_return": None if t.last_eval is None else t.last_eval.mean_return,
            "best_rolling_return": t.best_rolling_return, "wall_seconds": t.wall_time(),
        }

    def _write_summary(self, stop_reason: str | None, counters: dict[str, Any] | None = None) -> None:
        """Write ``summary.json`` with the trainer's counters now, or with ``counters``."""
        t = self.trainer
        target = self.config.get("target_reward")
        if not counters:
            self._remember_counters()
            counters = self._good
        best = counters["best_eval_return"]
        self.summary = {
            "algorithm": self.config["algo"], "env": self.config["env"], "seed": self.config["seed"],
            "steps": counters["steps"], "episodes": counters["episodes"], "updates": counters["updates"],
            # the counters' own moment: an error or divergence inside an iteration writes the last record's
            # counters, and its wall time was the error's (steps 1,536 with the seconds of step 2,048)
            "wall_seconds": round(counters.get("wall_seconds", t.wall_time()), 3), "best_eval_return": best,
            "last_eval_return": counters["last_eval_return"], "best_rolling_return": counters["best_rolling_return"],
            "target_reward": target, "solved": bool(target is not None and best is not None and best >= target),
            "stop_reason": stop_reason, "resumes": self.resumes, "resume_exact": t.resume_exact,
            "divergence_events": list(t.guard.events), "error": self.error,
            **provenance(),
            **({"opponent_snapshots": dict(self.opponent_snapshots)} if self.opponent_snapshots else {}),
        }
        # NaN / inf (an evaluation of a diverged policy) are not JSON: null, as `canter eval --json` writes them
        atomic_write(self.dir / "summary.json", json.dumps(_finite_or_null(self.summary), indent=2).encode())

    def _save_last_and_summary(self, stop_reason: str | None) -> None:
        """Save ``last`` with ``stop_reason`` and the summary (a finished run's summary first). When ``last`` cannot
        be saved (a full disk, a read-only ``checkpoints/``), the previous one stays and the summary still says so
        ('interrupted', with the error and the counters of the last record) before the error is raised."""
        # a finished run's summary goes first: killed after a finished 'last' and before its summary, a run had no
        # summary of its end (or a resumed one's 'interrupted') that a resume, refused as finished, never wrote;
        # killed between the two now, the previous 'last' resumes into this end again
        finished = stop_reason not in (None, "interrupted")
        self._saved_reason = None
        try:
            if finished:
                self._write_summary(stop_reason)
            self.save_resumable(stop_reason=stop_reason)
            self.stop_reason = stop_reason  # a later save_resumable() keeps it
        except Exception as exc:
            self.error = self.error or _one_line(exc)
            try:
                if finished and self._saved_reason == stop_reason:  # saved, then an on_checkpoint hook raised: as
                    self.stop_reason = stop_reason  # 'last' says (not 'interrupted', which --resume refused; and a
                    self._write_summary(stop_reason)  # save_resumable() after it keeps the reason, as after the loop)
                else:
                    self._write_summary("interrupted", self._good)
            except Exception:  # noqa: BLE001 - the save's error is the one to report
                pass
            raise
        if not finished:
            self._write_summary(stop_reason)

    def write_config(self) -> None:
        """Write the resolved ``config.yaml``, under a comment naming the code that wrote it (:func:`provenance_comment`)."""
        atomic_write(self.dir / "config.yaml", (provenance_comment() + dump_yaml(self.config)).encode())

    def _remove_unstarted(self) -> None:
        """A new run that failed before its first ``last`` (its setup or an ``on_train_start`` hook raised):
        the directory was empty or absent (``check_new_run_dir``), so what this run wrote there is
        removed: an empty directory given stays, one this run made goes, with the parents it made while they are empty."""
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.made_dir is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            return
        parent = self.dir.absolute().parent
        while self.made_dir != self.dir.absolute() and parent.is_relative_to(self.made_dir):
            try:
                parent.rmdir()  # only when empty: another run may have started there meanwhile
            except OSError:
                break
            parent = parent.parent

    # -- signals -------------------------------------------------------------------------------
    def _on_signal(self, signum: int, frame: Any) -> None:
        self._signals += 1
        if self._signals == 1:
            self.trainer.stop_requested = "interrupted"
            self._grace = grace_seconds(self._longest_iteration, STOP_GRACE_SECONDS)
            self._cancel_grace = start_grace(self._grace, self._on_grace_over)
            notice("canter: stopping after this iteration and saving the run (press Ctrl-C again to quit now; an "
                    f"iteration not done in {self._grace:.3g} s is dropped)")
            return
        self._abort = True
        raise KeyboardInterrupt

    def _on_grace_over(self, signum: int, frame: Any) -> None:
        notice(f"canter: the iteration did not end within {self._grace:.3g} s of the stop request; quitting "
                "without it (the last checkpoint stays)")
        self._on_signal(signum, frame)  # as a second Ctrl-C

    def _grace_ended(self) -> None:
        cancel, self._cancel_grace = self._cancel_grace, None
        cancel and cancel()

    # -- the run -------------------------------------------------------------------------------
    def __call__(self) -> Iterator[TrainRecord]:
        """Run training, writing the run directory; yields the trainer's records.

        One pass: the loggers are closed and the run's state saved when it ends, or when a loop
        left early is closed (:meth:`close`, the ``with`` block's end, or the interpreter's exit),
        so a second call is a :class:`CanterError` pointing at ``canter.resume`` /
        ``canter.api.resume_trainer``, which continue the run from its ``last`` checkpoint."""
        if self.trainer.closed and not self._called:
            raise CanterError(f"this Run of '{self.dir}' was closed before it trained (nothing was written): make it "
                              f"again with canter.make_trainer(..., run_dir=...)")
        if self._called:
            raise CanterError(f"this Run of '{self.dir}' has already been iterated (its loggers are closed); "
                              f"continue it with canter.api.resume_trainer({str(self.dir)!r}) or canter.resume({str(self.dir)!r})")
        self._called = True
        gen = self._records()
        self._gen = weakref.ref(gen)
        return gen

    def _records(self) -> Iterator[TrainRecord]:
        self.dir.mkdir(parents=True, exist_ok=True)
        token = acquire(self.dir)
        if self.resumed_step is None:  # the temp files of a run killed as it started here (check_new_run_dir let it)
            remove_temp_files(self.dir, ("config.yaml", "canter.lock"))
        if self.resumed_step is None and any(p.name != LOCK_NAME for p in self.dir.iterdir()):
            # another run wrote it since this one was made (make_trainer checked it was empty): nothing is overwritten
            release(self.dir, token)
            raise CanterError(f"run directory '{self.dir}' is no longer empty: another run wrote it after this one was "
                              f"made; nothing was written, make this run again with another run_dir")
        _OPEN_RUNS.add(self)
        started: list[Any] = []  # the loggers whose start() returned
        try:  # an error (or Ctrl-C) here must give the lock back: a later resume in this process needs it
            with sigterm_as_ctrl_c():  # a SIGTERM while the loggers start (a W&B init) cleans up as Ctrl-C does
                if self.resumed_step is not None:
                    remove_temp_files(self.dir / "checkpoints", (".safetensors", ".json"))
                    remove_temp_files(self.dir, (".parquet", "config.yaml", "summary.json", "report.html",
                                                 "canter.lock"))
                else:  # a resumed run rewrites it once it has started (a failed resume leaves the run as it was)
                    self.write_config()
                    if self.snapshots is not None:
                        self.snapshots.write(self.dir)
                for lg in self.loggers:
                    lg.start(self)
                    started.append(lg)
            old_handlers = install_stop_handlers(self._on_signal)
        except BaseException:
            _OPEN_RUNS.discard(self)
            release(self.dir, token)
            for lg in started:  # they hold files open (one never started must not write: a resumed run's files)
                try:
                    lg.close()
                except (Exception, KeyboardInterrupt):  # noqa: BLE001 - the setup error (or Ctrl-C) is the one to
                    pass  # report; a second Ctrl-C or SIGTERM while one closes still closes the others, as _finish
            if self.resumed_step is None:
                self._remove_unstarted()  # nothing of this new run is worth keeping
            raise
        every = self.checkpoint_every
        start = self.trainer.step if self.resumed_step is None else self.resumed_step
        if every and (self.resumed_step is None or self.next_checkpoint is None):  # (a checkpoint before it was saved)
            self.next_checkpoint = (start // every + 1) * every  # the uninterrupted run's grid
        self.trainer.checkpoint_due = self.next_checkpoint
        # periodic checkpoints a killed process saved after the 'last' resumed from: not this run's until it saves
        # them again (a grid changed by --checkpoint-every never does; canter.checkpoint_keep)
        stale = set() if self.resumed_step is None else {
            step for step in periodic_checkpoints(self.dir / "checkpoints") if step > self.resumed_step}
        outcome, inside = "error", False
        try:
            records = self.trainer()
            while True:
                inside, began = True, time.monotonic()
                try:
                    record = next(records)
                except StopIteration:
                    break
                finally:  # the iteration has ended (its state is consistent): no grace timer may stop the save
                    self._grace_ended()
                self._longest_iteration = max(self._longest_iteration, time.monotonic() - began)
                inside = False
                self.last_record = record
                self._remember_counters()
                for lg in self.loggers:
                    lg.log(record)
                # a record that only a stop signal made (between two logged iterations, log_every > 1) is not
                # one of the uninterrupted run's: the periodic checkpoint waits for the resumed run's next record
                if self.next_checkpoint is not None and record.step >= self.next_checkpoint and not record.stop_only:
                    self.save(f"step-{record.step:09d}")
                    stale.discard(record.step)
                    if self.keep_checkpoints:  # the new one is complete: older ones beyond the newest K go
                        prune_periodic(self.dir / "checkpoints", self.keep_checkpoints, record.step, stale)
                    while self.next_checkpoint <= record.step:
                        self.next_checkpoint += every
                    self.trainer.checkpoint_due = self.next_checkpoint
                    if not record.done:  # the last record's 'last' is saved when the loop ends
                        self.save_resumable()
                if record.done:  # the trainer ends after this record: a loop that stops here finished the run
                    outcome = "done"
                try:
                    yield record
                except GeneratorExit:  # the loop was left at this record and is closed now, maybe much later
                    self.trainer.stop_clock()
                    raise
            outcome = "done"
        except TrainingDiverged as exc:
            outcome, self.divergence = "diverged", exc
            raise
        except Exception as exc:  # stop_reason stays "interrupted" (resumable); the summary says why
            self.error = _one_line(exc)
            raise
        finally:
            try:
                self._finish(outcome, inside, old_handlers, token)
            finally:  # a Ctrl-C during the cleanup (the handlers given back raise it again) skipped its release
                _OPEN_RUNS.discard(self)
                release(self.dir, token)  # (a no-op when _finish gave it back)

    def _finish(self, outcome: str, inside: bool, old_handlers: dict[int, Any], token: str) -> None:
        """The end of :meth:`_records`: give back the signal handlers, save what the outcome allows, close the
        loggers and give back the directory's lock (``token``)."""
        self._grace_ended()
        give_back_stop_handlers(self._on_signal, old_handlers)
        # the directory was deleted while the run was open (a loop left early, closed at exit):
        # nothing is written back into it
        gone = outermost_missing(self.dir)
        # a new run that failed before its first 'last' (its setup, or an on_train_start hook, raised):
        # nothing in it to resume, and the directory would refuse a second try, so it is removed
        unstarted = outcome == "error" and self.resumed_step is None and not self._saved_last
        end_saved = False  # 'last' saved at the run's end: a Ctrl-C while the loggers close reports its step
        summarized = False  # summary.json written here (a logger's close failing says it stands)
        try:
            started = bool(self.trainer.wall_start)
            if gone is not None or unstarted:
                pass
            elif outcome == "done":
                self._save_last_and_summary(getattr(self.last_record, "stop_reason", None))
                end_saved = summarized = True
            elif outcome == "diverged":  # the counters of the last good state, which the files hold
                self._write_summary("diverged", self._good)
                summarized = True
            elif started and not self._abort and not inside:  # stopped between iterations: state is consistent
                self._save_last_and_summary("interrupted")
                end_saved = summarized = True
            elif started:  # an error or a second Ctrl-C inside an iteration: the previous 'last' stays
                self._write_summary("interrupted", self._good)
                summarized = True
        finally:
            close_error: BaseException | None = None
            failed: list[str] = []  # a logger's close() that raised an error: a warning, the run's outcome stays
            for lg in self.loggers:  # each one closed, and the lock given back, when one fails (a full disk)
                try:
                    lg.close()
                except KeyboardInterrupt as exc:  # raised below, once the run is given back; a Ctrl-C or SIGTERM
                    # while one closes (a W&B finish) still closes the others (the console)
                    close_error = exc
                    # (not after a second Ctrl-C inside an iteration: the summary's step is not the 'last' kept)
                    self.interrupted_closing |= end_saved
                except Exception as exc:  # noqa: BLE001 - OSError(28) from a last flush replaced the run's outcome
                    # (a divergence's message lost; no file name: a traceback from canter train) and its exit code
                    failed.append(f"{type(lg).__name__} could not close: {_one_line(exc)}")
            _OPEN_RUNS.discard(self)
            release(self.dir, token)
            if gone is not None:
                shutil.rmtree(gone, ignore_errors=True)  # what the loggers' last flush made again
            elif unstarted:
                self._remove_unstarted()  # nothing of this new run is worth keeping
            stands = ("the run's outcome stands (its directory was deleted while the run was open: nothing was written "
                      "back into it)" if gone is not None else "the run's outcome stands (it failed before its first "
                      "checkpoint: its directory was removed)" if unstarted else "the run's outcome and its "
                      "summary.json stand" if summarized else "the run's outcome stands")  # (no summary.json: not said)
            for line in failed:  # (after the lock: a warnings filter 'error' raises here); the run named, each run's
                # line is its own: Python shows a message once per place (a loop's or canter benchmark's later runs)
                warn(CanterWarning(f"run {self.dir}: the run's {line}; {stands}"))
            if close_error is not None:
                raise close_error


#: runs whose generator has started and not ended: closed at the interpreter's exit, while saving
#: still works (a generator collected during shutdown cannot import what saving needs)
_OPEN_RUNS: weakref.WeakSet[Run] = weakref.WeakSet()
if hasattr(os, "register_at_fork"):  # a forked child (that exits through sys.exit) does not own the parent's runs
    os.register_at_fork(after_in_child=_OPEN_RUNS.clear)


@atexit.register
def _close_open_runs() -> None:
    for run in list(_OPEN_RUNS):
        try:
            run.close()
        except Exception as exc:  # noqa: BLE001 - one line per run, and the others still get closed
            print(f"canter: could not save the run in '{run.dir}' at exit: {exc}", file=sys.stderr)
