"""Per-episode history (``history.parquet``), update and evaluation statistics in parquet."""
from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from canter.callbacks import Callback
from canter.checkpoint import atomic_write
from canter.trainers.base import TrainRecord

HISTORY_COLUMNS = ("step", "wall_time", "episode_return", "episode_length", "rolling_return")
#: columns a multi-agent run adds: each episode's agent, and its policy where there are several
LABEL_COLUMNS = ("agent", "policy")
EVALUATION_COLUMNS = ("step", "wall_time", "mean_return", "std_return", "episodes")
#: the type of each fixed column, so that a file with no rows (no episode finished yet) has them too
COLUMN_TYPES = {"step": pa.int64(), "wall_time": pa.float64(), "episode_return": pa.float64(),
                "episode_length": pa.int64(), "rolling_return": pa.float64(),  # labels: as the env names them
                "mean_return": pa.float64(), "std_return": pa.float64(),
                "episodes": pa.int64(), "steps_per_second": pa.float64()}


def write_parquet(path: Path, rows: list[dict[str, Any]], columns: tuple[str, ...] | None = None) -> None:
    """Atomically write ``rows`` (dicts) as a parquet table (``columns``: the fixed columns, typed by
    :data:`COLUMN_TYPES`; None: the keys of the rows, types inferred)."""
    if columns is None:
        seen: dict[str, None] = {}
        for row in rows:
            seen.update(dict.fromkeys(row))
        columns = tuple(seen)
        table = pa.table({c: [row.get(c) for row in rows] for c in columns})
    else:
        table = pa.table({c: pa.array([row.get(c) for row in rows], type=COLUMN_TYPES.get(c)) for c in columns})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    atomic_write(path, sink.getvalue())


FILES = ("history", "updates", "evaluations")


def check_history(run_dir: Path, rows: dict[str, int]) -> None:
    """Raise a CanterError unless each history file of ``run_dir`` holds the ``rows`` a checkpoint expects."""
    for name in FILES:
        _read_rows(Path(run_dir) / f"{name}.parquet", rows.get(name, 0))


def _read_rows(path: Path, n: int) -> list[dict[str, Any]]:
    """The first ``n`` rows of a parquet file as dicts (rows written after a checkpoint are dropped)."""
    if n == 0:
        return []
    try:
        rows = pq.read_table(path).to_pylist()
    except (OSError, pa.ArrowException) as exc:
        from canter.errors import CanterError

        raise CanterError(f"cannot resume: {path} is missing or unreadable ({exc})") from None
    if len(rows) < n:
        from canter.errors import CanterError

        raise CanterError(f"cannot resume: {path} has {len(rows)} rows but the checkpoint expects {n}")
    return rows[:n]


class _Started(Callback):
    """Lets a resumed run's history files be rewritten once training has started (not part of the hook state)."""

    internal = True

    def __init__(self, logger: HistoryLogger) -> None:
        self.logger = logger

    def on_train_start(self, trainer: Any) -> None:  # noqa: D102
        self.logger._write_at_close = True


class HistoryLogger:
    """Writes ``history.parquet`` (one row per finished training episode), ``updates.parquet``
    (one row per logged iteration) and ``evaluations.parquet`` (one row per evaluation)."""

    def __init__(self, run_dir: str | Path, flush_seconds: float = 30.0) -> None:
        self.dir = Path(run_dir)
        self.flush_seconds = flush_seconds
        self.episodes: list[dict[str, Any]] = []
        self.updates: list[dict[str, Any]] = []
        self.evaluations: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()
        #: whether :meth:`close` rewrites the files: not for a resumed run whose training never started (a
        #: logger's start failed, e.g. a W&B init that raised): its files keep the rows written after 'last'
        self._write_at_close = True

    def start(self, run: Any) -> None:
        """Start timing flushes; on a resumed run, reload the rows the resumed checkpoint had."""
        self._last_flush = time.monotonic()
        rows = getattr(run, "history_rows", None)
        self._write_at_close = not rows
        hooks = getattr(getattr(run, "trainer", None), "hooks", None)
        if rows and hooks is not None:
            hooks.add(_Started(self))
        if rows:
            self.episodes = _read_rows(self.dir / "history.parquet", rows.get("history", 0))
            self.updates = _read_rows(self.dir / "updates.parquet", rows.get("updates", 0))
            self.evaluations = _read_rows(self.dir / "evaluations.parquet", rows.get("evaluations", 0))

    def rows(self) -> dict[str, int]:
        """Rows logged so far per file (saved with resumable checkpoints)."""
        return {"history": len(self.episodes), "updates": len(self.updates), "evaluations": len(self.evaluations)}

    def log(self, record: TrainRecord) -> None:  # noqa: D102
        for ep in record.episodes:
            self.episodes.append({
                "step": ep.step, "wall_time": ep.wall_time, "episode_return": ep.episode_return,
                "episode_length": ep.episode_length, "rolling_return": ep.rolling_return,
                **{k: getattr(ep, k) for k in LABEL_COLUMNS if getattr(ep, k) is not None},
            })
        if record.losses:
            self.updates.append({"step": record.step, "wall_time": record.wall_time,
                                 "steps_per_second": record.steps_per_second, **record.losses})
        if record.evaluation is not None:
            ev = record.evaluation
            self.evaluations.append({"step": record.step, "wall_time": record.wall_time, "mean_return": ev.mean_return,
                                     "std_return": ev.std_return, "episodes": ev.episodes})
        if time.monotonic() - self._last_flush > self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        """Rewrite the parquet files with everything logged so far."""
        labels = tuple(k for k in LABEL_COLUMNS if self.episodes and k in self.episodes[0])
        write_parquet(self.dir / "history.parquet", self.episodes, HISTORY_COLUMNS + labels)
        # the losses' columns come with the first update; before it, the fixed ones
        write_parquet(self.dir / "updates.parquet", self.updates,
                      None if self.updates else ("step", "wall_time", "steps_per_second"))
        write_parquet(self.dir / "evaluations.parquet", self.evaluations, EVALUATION_COLUMNS)
        self._last_flush = time.monotonic()

    def close(self) -> None:
        """Rewrite the files with every row (a resumed run whose training never started leaves them as they were)."""
        if self._write_at_close:
            self.flush()
