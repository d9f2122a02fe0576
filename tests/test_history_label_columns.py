"""The optional columns of the history files (evaluations' success_rate, the history's agent and policy) are kept
where any row has them, not only where the first row does."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from canter.logging.history import HistoryLogger
from canter.trainers.evaluation import EvalResult
from canter.trainers.records import TrainRecord


def _eval_record(step: int, successes: list[float]) -> TrainRecord:
    return TrainRecord(step=step, iteration=step, wall_time=float(step), steps_per_second=1.0,
                       evaluation=EvalResult(1.0, 0.0, [1.0], [1], successes))


def test_success_rate_of_a_later_evaluation_is_written(tmp_path: Path) -> None:
    """The first evaluation's env reported no success (an env that sets ``is_success`` only on success), a later
    one's did: its success_rate was dropped, the column decided by the first row alone."""
    logger = HistoryLogger(tmp_path)
    logger.log(_eval_record(1, []))
    logger.log(_eval_record(2, [1.0, 0.0]))
    logger.close()
    rows = pq.read_table(tmp_path / "evaluations.parquet").to_pylist()
    assert [r.get("success_rate") for r in rows] == [None, 0.5]


def test_success_rate_appearing_after_a_flush_is_written(tmp_path: Path) -> None:
    """The same where the rows without it were already converted (flushed) when the first with it came."""
    logger = HistoryLogger(tmp_path)
    logger.log(_eval_record(1, []))
    logger.flush()
    logger.log(_eval_record(2, [1.0]))
    logger.log(_eval_record(3, []))
    logger.close()
    table = pq.read_table(tmp_path / "evaluations.parquet")
    assert table.column_names[-1] == "success_rate" and table["success_rate"].to_pylist() == [None, 1.0, None]
    assert str(table.schema.field("success_rate").type) == "double"
