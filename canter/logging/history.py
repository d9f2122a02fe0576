"""Per-episode history (``history.parquet``), update and evaluation statistics in parquet.

pyarrow is imported where a table is made or read (0.1-0.2 s): a trainer without a run directory (``make_trainer``'s
own loop) writes none."""
from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from canter.callbacks import Callback
from canter.atomic import atomic_file
from canter.trainers.base import TrainRecord

if TYPE_CHECKING:
    import pyarrow as pa

HISTORY_COLUMNS = ("step", "wall_time", "episode_return", "episode_length", "rolling_return")
#: columns a multi-agent run adds: each episode's agent, and its policy where there are several
LABEL_COLUMNS = ("agent", "policy")
EVALUATION_COLUMNS = ("step", "wall_time", "mean_return", "std_return", "episodes")
#: the columns every evaluation row is written with: :data:`EVALUATION_COLUMNS` and whether the deterministic policy
#: played (the run's ``eval_deterministic``; a file written before it has none, and is resumed as deterministic)
EVALUATION_WRITTEN = EVALUATION_COLUMNS + ("deterministic",)
#: the value of a written column that a resumed file lacks (None: null)
RESUMED_DEFAULTS = {"deterministic": True}
#: the columns of every update row (the losses' come with them)
UPDATE_COLUMNS = ("step", "wall_time", "steps_per_second")
#: the column an evaluation adds where the env reports ``info["is_success"]`` (goal envs)
SUCCESS_COLUMNS = ("success_rate",)


@functools.cache
def column_types() -> dict[str, pa.DataType]:
    """The type of each fixed column, so that a file with no rows (no episode finished yet) has them too."""
    import pyarrow as pa

    return {"step": pa.int64(), "wall_time": pa.float64(), "episode_return": pa.float64(),
            "episode_length": pa.int64(), "rolling_return": pa.float64(),  # labels: as the env names them
            "mean_return": pa.float64(), "std_return": pa.float64(),
            "episodes": pa.int64(), "steps_per_second": pa.float64(), "success_rate": pa.float64(),
            "deterministic": pa.bool_()}


def _to_table(rows: list[dict[str, Any]], columns: tuple[str, ...] | None = None) -> pa.Table:
    """``rows`` (dicts) as a table (``columns``: the fixed columns, typed by :func:`column_types`; None: the
    keys of the rows in the order they first appear, types inferred, a key missing from a row giving null)."""
    import pyarrow as pa

    if columns is None:
        seen: dict[str, None] = {}
        for row in rows:
            seen.update(dict.fromkeys(row))
        return pa.table({c: _numbers([row.get(c) for row in rows]) for c in seen})
    return pa.table({c: pa.array([row.get(c) for row in rows], type=column_types().get(c)) for c in columns})


def _numbers(values: list[Any]) -> list[Any]:
    """A column of ``values`` with each bool as 1.0 / 0.0 where other numbers are among them (pyarrow infers a bool
    column from a first bool and refused the numbers after it, an int column from a first int and refused a bool
    after it: a statistic reported as ``False`` and later as ``0.5`` ended the run with pyarrow's ArrowInvalid when
    ``updates.parquet`` was written)."""
    if any(type(v) is bool for v in values) and any(v is not None and type(v) is not bool for v in values):
        return [float(v) if type(v) is bool else v for v in values]
    return values


def _bools_as_numbers(table: pa.Table, chunk: pa.Table) -> list[pa.Table]:
    """``table`` and ``chunk`` (the rows after it) with a column that is bool in one and numbers in the other as
    float64 in both, as :func:`_numbers` makes it when they are converted together (pyarrow concatenates no bool
    column with a number one: every row so far was converted again at each such flush, a second a flush for 200k
    rows, with a dict per row in memory)."""
    import pyarrow as pa

    def numeric(t: pa.DataType) -> bool:
        return pa.types.is_integer(t) or pa.types.is_floating(t)

    for name in set(table.column_names) & set(chunk.column_names):
        a, b = table.schema.field(name).type, chunk.schema.field(name).type
        if (pa.types.is_boolean(a) and numeric(b)) or (numeric(a) and pa.types.is_boolean(b)):
            if a != pa.float64():
                table = table.set_column(table.column_names.index(name), name, table[name].cast(pa.float64()))
            if b != pa.float64():
                chunk = chunk.set_column(chunk.column_names.index(name), name, chunk[name].cast(pa.float64()))
    return [table, chunk]


def _write_table(path: Path, table: pa.Table) -> None:
    """Atomically write ``table`` as the parquet file ``path``, with a CRC checksum on each page (checked
    when canter reads it back, so a changed byte is an error rather than a wrong number)."""
    import pyarrow.parquet as pq

    with atomic_file(path) as f:
        pq.write_table(table, f, write_page_checksum=True)


def write_parquet(path: Path, rows: list[dict[str, Any]], columns: tuple[str, ...] | None = None) -> None:
    """Atomically write ``rows`` (dicts) as a parquet table (``columns``: the fixed columns, typed by
    :func:`column_types`; None: the keys of the rows, types inferred)."""
    _write_table(path, _to_table(rows, columns))


FILES = ("history", "updates", "evaluations")


#: the columns each file's rows have, which a resumed run reads back
REQUIRED = {"history": HISTORY_COLUMNS, "updates": UPDATE_COLUMNS, "evaluations": EVALUATION_COLUMNS}


def check_history(run_dir: Path, rows: dict[str, int]) -> None:
    """Raise a CanterError unless each history file of ``run_dir`` holds the ``rows`` a checkpoint expects."""
    for name in FILES:
        _read_rows(Path(run_dir) / f"{name}.parquet", rows.get(name, 0), REQUIRED[name])


def _check_columns(path: Path, table: pa.Table, required: tuple[str, ...]) -> None:
    """Raise a CanterError unless ``table`` has each ``required`` column, as numbers of its type (a file another
    tool wrote in its place would otherwise be resumed as rows of nulls, or fail with a pyarrow traceback)."""
    import pyarrow as pa

    from canter.errors import CanterError

    for c in required:
        if c not in table.column_names:
            raise CanterError(f"cannot resume: {path} is not a table canter wrote: it has no '{c}' column "
                              f"(columns: {', '.join(table.column_names) or 'none'})")
        try:
            table[c].cast(column_types()[c])
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise CanterError(f"cannot resume: {path} is not a table canter wrote: its '{c}' column holds "
                              f"{table[c].type}, not {column_types()[c]}") from None


def _read_rows(path: Path, n: int, required: tuple[str, ...]) -> pa.Table | None:
    """The first ``n`` rows of a parquet file (rows written after a checkpoint are dropped; None for none),
    which must have the ``required`` columns."""
    if path.is_dir():  # pyarrow reads a directory as a dataset of the parquet files in it (none: 0 rows); with no
        # rows expected (no evaluation before the checkpoint) the run trained and failed writing it at the end
        from canter.errors import CanterError

        raise CanterError(f"cannot resume: {path} is a directory, not the table the run wrote; put the run's file "
                          f"back in its place")
    if n == 0:
        return None
    from canter.errors import check_utf8_path

    check_utf8_path(path, "table")
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, page_checksum_verification=True)  # files without checksums read too
    except (OSError, pa.ArrowException) as exc:
        from canter.errors import CanterError

        raise CanterError(f"cannot resume: {path} is missing or unreadable ({exc})") from None
    if table.num_rows < n:
        from canter.errors import CanterError

        raise CanterError(f"cannot resume: {path} has {table.num_rows} rows but the checkpoint expects {n}")
    table = table.slice(0, n)
    _check_columns(path, table, required)
    return table


def _missing(column: str, n: int) -> pa.Array:
    """``n`` rows of a fixed ``column`` that a resumed file lacks: :data:`RESUMED_DEFAULTS`' value, else null."""
    import pyarrow as pa

    value = RESUMED_DEFAULTS.get(column)
    typ = column_types().get(column)
    return pa.nulls(n, typ) if value is None else pa.array([value] * n, type=typ)


class _Rows:
    """One file's rows: those converted so far as a pyarrow table (columnar), the newest as dicts until
    the next flush (or until :attr:`BATCH` of them wait), so a flush converts only the rows new since the
    last one and memory does not hold a dict per row."""

    #: dict rows that may wait before they are converted
    BATCH = 10_000

    def __init__(self, fixed: tuple[str, ...] | None, empty: tuple[str, ...], labels: tuple[str, ...] = ()) -> None:
        self.fixed = fixed  # the typed columns; None: the rows' keys, types inferred
        self.empty = empty  # the columns of a file with no rows
        self.labels = labels  # optional columns, in the file where any row has them (null in the rows without)
        self.table: pa.Table | None = None
        self.new: list[dict[str, Any]] = []

    def __len__(self) -> int:
        return (0 if self.table is None else self.table.num_rows) + len(self.new)

    def _columns(self, *have: Any) -> tuple[str, ...] | None:
        """The file's columns: the fixed ones and the labels that any of ``have`` (rows' keys, or column names) has."""
        return None if self.fixed is None else self.fixed + tuple(k for k in self.labels if any(k in h for h in have))

    def resume(self, table: pa.Table | None) -> None:
        """Start from ``table`` (the rows a checkpoint had; fixed columns cast to their types)."""
        import pyarrow as pa

        if table is not None and self.fixed is not None:
            names, n = table.column_names, table.num_rows
            table = pa.table({c: table[c].cast(column_types()[c]) if c in names and c in column_types()
                              else table[c] if c in names else _missing(c, n)
                              for c in self._columns(names) or ()})
        self.table, self.new = table, []

    def convert(self) -> pa.Table:
        """Every row so far as a table (the waiting ones converted and appended to the others)."""
        import pyarrow as pa

        if self.new:
            # a label any row has (the first evaluation's env reported no success, a later one's did): the rows
            # before it null there; the first row's labels alone dropped the later rows' success_rate
            columns = self._columns(*([] if self.table is None else [self.table.column_names]), *self.new)
            try:
                chunk = _to_table(self.new, columns)
                table = (chunk if self.table is None
                         else pa.concat_tables(_bools_as_numbers(self.table, chunk), promote_options="permissive"))
            except (pa.ArrowTypeError, pa.ArrowInvalid):  # bools and numbers in a column, a batch starting with
                # a bool: every row converted together, as before batches (True is 1.0 among earlier floats)
                table = _to_table(self.new if self.table is None else self.table.to_pylist() + self.new, columns)
            if table.num_columns and table.column(0).num_chunks > 64:
                table = table.combine_chunks()
            self.table, self.new = table, []
        return self.table if self.table is not None else _to_table([], self.empty)


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
        # the losses' columns come with the first update; before it, the fixed ones
        self._files = {"history": _Rows(HISTORY_COLUMNS, HISTORY_COLUMNS, LABEL_COLUMNS),
                       "updates": _Rows(None, UPDATE_COLUMNS),
                       "evaluations": _Rows(EVALUATION_WRITTEN, EVALUATION_WRITTEN, SUCCESS_COLUMNS)}
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
            for name, f in self._files.items():
                f.resume(_read_rows(self.dir / f"{name}.parquet", rows.get(name, 0), REQUIRED[name]))

    def rows(self) -> dict[str, int]:
        """Rows logged so far per file (saved with resumable checkpoints)."""
        return {name: len(f) for name, f in self._files.items()}

    def table(self, name: str) -> pa.Table:
        """The rows logged so far to ``name`` (``history``, ``updates`` or ``evaluations``) as written."""
        return self._files[name].convert()

    @property
    def episodes(self) -> list[dict[str, Any]]:
        """The history rows so far as dicts (built from :meth:`table`: slow for long runs)."""
        return self.table("history").to_pylist()

    @property
    def updates(self) -> list[dict[str, Any]]:
        """The update rows so far as dicts (built from :meth:`table`: slow for long runs)."""
        return self.table("updates").to_pylist()

    @property
    def evaluations(self) -> list[dict[str, Any]]:
        """The evaluation rows so far as dicts (built from :meth:`table`: slow for long runs)."""
        return self.table("evaluations").to_pylist()

    def _add(self, name: str, row: dict[str, Any]) -> None:
        f = self._files[name]
        f.new.append(row)
        if len(f.new) >= f.BATCH:
            f.convert()

    def log(self, record: TrainRecord) -> None:
        """Queue ``record``'s rows: one per finished episode, its losses, its evaluation (flushed every
        ``flush_seconds``)."""
        for ep in record.episodes:
            self._add("history", {
                "step": ep.step, "wall_time": ep.wall_time, "episode_return": ep.episode_return,
                "episode_length": ep.episode_length, "rolling_return": ep.rolling_return,
                **{k: getattr(ep, k) for k in LABEL_COLUMNS if getattr(ep, k) is not None},
            })
        if record.losses:
            self._add("updates", {"step": record.step, "wall_time": record.wall_time,
                                  "steps_per_second": record.steps_per_second, **record.losses})
        if record.evaluation is not None:
            ev = record.evaluation
            self._add("evaluations", {"step": record.step, "wall_time": record.wall_time, "mean_return": ev.mean_return,
                                      "std_return": ev.std_return, "episodes": ev.episodes,
                                      "deterministic": bool(getattr(ev, "deterministic", True)),
                                      **({} if getattr(ev, "success_rate", None) is None else {"success_rate": ev.success_rate})})
        if time.monotonic() - self._last_flush > self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        """Rewrite the parquet files with everything logged so far (converting only the rows new since the
        last flush; the files are written from the tables)."""
        for name, f in self._files.items():
            _write_table(self.dir / f"{name}.parquet", f.convert())
        self._last_flush = time.monotonic()

    def close(self) -> None:
        """Rewrite the files with every row (a resumed run whose training never started leaves them as they were)."""
        if self._write_at_close:
            self.flush()
