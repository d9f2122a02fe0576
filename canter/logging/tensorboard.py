"""TensorBoard event files in the run directory.

The file is TensorBoard's own format (a TFRecord stream of ``Event`` protobufs, the messages taken
from the ``tensorboard`` package, CRC32C from ``google-crc32c``). Writing it directly instead of
through ``torch.utils.tensorboard.SummaryWriter`` saves the 0.2-0.4 s that importing the latter
costs every process (it loads TensorBoard's summary plugins and TensorFlow stub), which is a tenth
of a whole CartPole training run.
"""
from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from canter.callbacks import Callback
from canter.logging.base import made_by_stop, scalars
from canter.trainers.base import TrainRecord

_FLUSH_SECONDS = 10.0


def _masked_crc(data: bytes) -> bytes:
    """TFRecord's masked CRC32C of ``data``, little-endian."""
    import google_crc32c

    crc = google_crc32c.value(data)
    return struct.pack("<I", (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)


class EventFileWriter:
    """Appends scalar summaries to ``events.out.tfevents.<time>.<host>.<pid>.0`` in ``log_dir``."""

    def __init__(self, log_dir: str | Path) -> None:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary

        self._event, self._summary = Event, Summary
        log_dir = Path(log_dir)
        log_dir.mkdir(parents=True, exist_ok=True)
        self.path = log_dir / f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}.0"
        self._file = open(self.path, "ab")  # noqa: SIM115 - closed in close()
        self._last_flush = time.monotonic()
        self._write(Event(wall_time=time.time(), step=0, file_version="brain.Event:2"))
        self.flush()

    @contextmanager
    def _naming_errors(self) -> Iterator[None]:
        """An OSError of a write or flush (ENOSPC, EIO: they name no file) raised naming the event file."""
        try:
            yield
        except OSError as exc:
            if exc.filename is not None or exc.errno is None:
                raise
            raise type(exc)(exc.errno, exc.strerror, str(self.path)) from None

    def _write(self, event: Any) -> None:
        data = event.SerializeToString()
        header = struct.pack("<Q", len(data))
        with self._naming_errors():
            self._file.write(header + _masked_crc(header) + data + _masked_crc(data))

    def add_scalar(self, tag: str, value: float, step: int, wall_time: float | None = None) -> None:
        """One scalar point (flushed to disk at most every 10 s, and on close)."""
        summary = self._summary(value=[self._summary.Value(tag=tag, simple_value=float(value))])
        self._write(self._event(wall_time=wall_time or time.time(), step=int(step), summary=summary))
        if time.monotonic() - self._last_flush > _FLUSH_SECONDS:
            self.flush()

    def _start(self, step: int) -> None:
        """A SessionLog START at ``step``."""
        from tensorboard.compat.proto.event_pb2 import SessionLog

        self._write(self._event(wall_time=time.time(), step=int(step), session_log=SessionLog(status=SessionLog.START)))

    def start_session(self) -> None:
        """A new run's SessionLog START (at step 0, before any point): TensorBoard's Python loader
        (``--load_fast=false``, ``plugin_event_accumulator``) takes a run's first START as its start and purges
        only at a later one, so without it a resumed run's START was ignored there."""
        self._start(0)
        self.flush()

    def restart_at(self, step: int) -> None:
        """A resumed run's SessionLog START at ``step``: TensorBoard then drops older files' events at or after
        ``step``. Written twice, so that the second is a restart to TensorBoard's Python loader also where the
        run's first file has no START of its own (written before 2026-11-27): it purged nothing there, and the
        killed process's points after the checkpoint stayed beside the resumed run's (a second START purges
        nothing more, in either loader)."""
        self._start(step)
        self._start(step)
        self.flush()

    def flush(self) -> None:
        """Write buffered events to disk."""
        with self._naming_errors():
            self._file.flush()
        self._last_flush = time.monotonic()

    def close(self) -> None:
        """Flush and close the file (closed also when the flush fails)."""
        if not self._file.closed:
            try:
                self.flush()
            finally:
                try:
                    self._file.close()
                except OSError:  # its buffer could not be written: the flush's error is the one to report
                    pass


class _FlushOnCheckpoint(Callback):
    """Opens the event file when training starts and flushes it when a checkpoint is saved (not part of
    the hook state)."""

    internal = True

    def __init__(self, logger: TensorBoardLogger) -> None:
        self.logger = logger

    def on_train_start(self, trainer: Any) -> None:  # noqa: D102
        self.logger._open()

    def on_checkpoint(self, trainer: Any, path: Any) -> None:  # noqa: D102
        writer = self.logger.writer  # None before training started
        if writer is not None and not writer._file.closed:  # Run.save after the loop ended saves all the same
            writer.flush()


class TensorBoardLogger:
    """Writes episode returns/lengths and every record scalar as TensorBoard scalars.

    The event file is created when training starts (or at the first record), so that a trainer that is
    built and never run, or a resume that fails before training (a W&B init that raised), leaves the run
    directory as it was."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.writer: EventFileWriter | None = None
        #: a resumed run: the step from which TensorBoard drops the events the killed run logged (None: new run)
        self._restart: int | None = None

    def start(self, run: Any) -> None:
        """Remember the resumed checkpoint's step (the event file, made when training starts, hides the
        killed run's events after it); flush the events to disk whenever the run saves a checkpoint."""
        step = getattr(run, "resumed_step", None)
        # the record at the checkpoint's own step was logged before the checkpoint was saved and is
        # not logged again: START at the next step, since TensorBoard drops events at or after it
        self._restart = None if step is None else step + 1
        trainer = getattr(run, "trainer", None)
        hooks = getattr(trainer, "hooks", None)
        if hooks is not None:  # the events up to a resumable checkpoint must survive a kill after it
            hooks.add(_FlushOnCheckpoint(self))

    def _open(self) -> EventFileWriter:
        """The event file, created (with a SessionLog START: the run's, or a resumed run's at its step) at the first
        call."""
        if self.writer is None:
            self.writer = EventFileWriter(self.run_dir)
            if self._restart is None:
                self.writer.start_session()
            else:
                self.writer.restart_at(self._restart)
        return self.writer

    def log(self, record: TrainRecord) -> None:
        """Write ``record``'s episodes and scalars as TensorBoard scalars."""
        writer = self._open()
        for ep in record.episodes:
            writer.add_scalar("charts/episode_return", ep.episode_return, ep.step)
            writer.add_scalar("charts/episode_length", ep.episode_length, ep.step)
        if made_by_stop(record):  # the uninterrupted run has no point here
            return
        for k, v in scalars(record).items():
            writer.add_scalar(k, v, record.step)

    def close(self) -> None:
        """Flush and close the event file."""
        if self.writer is not None:
            self.writer.close()
