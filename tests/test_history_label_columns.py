"""The columns of the history files: the optional ones (evaluations' success_rate, the history's agent and policy) are
kept where any row has them, not only where the first row does; a statistic mixing bools and numbers is written."""
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


def _update(step: int, value: object) -> TrainRecord:
    return TrainRecord(step=step, iteration=step, wall_time=float(step), steps_per_second=1.0, losses={"x": value})


def test_a_statistic_reported_as_bool_then_number_is_written(tmp_path: Path) -> None:
    """A learn statistic reported as ``False`` and later as a number (or an int, then a bool): writing
    updates.parquet raised pyarrow's ArrowInvalid / ArrowTypeError, which ended the run. The bools are 1.0 / 0.0
    among the numbers, before and after a flush; a statistic that is always a bool stays one."""
    for first, second, flush in ((False, 0.5, False), (True, 2, True), (1, True, False), (1, True, True)):
        logger = HistoryLogger(tmp_path)
        logger.log(_update(1, first))
        if flush:
            logger.flush()
        logger.log(_update(2, second))
        logger.close()
        assert pq.read_table(tmp_path / "updates.parquet")["x"].to_pylist() == [float(first), float(second)]
    logger = HistoryLogger(tmp_path)
    logger.log(_update(1, True))
    logger.log(_update(2, False))
    logger.close()
    column = pq.read_table(tmp_path / "updates.parquet")["x"]
    assert str(column.type) == "bool" and column.to_pylist() == [True, False]  # (1.0 == True: the type says it)
