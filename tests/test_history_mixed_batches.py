"""A statistic that is a bool in some update batches and a number in others is appended batch by batch: every row so
far was converted again at each flush whose batch disagreed with the table's type (a second a flush at 200k rows)."""
from __future__ import annotations

from canter.logging.history import _Rows


def _batch(start: int, value: object) -> list[dict[str, object]]:
    return [{"step": start + i, "wall_time": 1.0, "steps_per_second": 1.0, "x": value} for i in range(3)]


def test_bool_and_number_batches_are_appended_not_reconverted() -> None:
    for first, second in ((0.5, True), (True, 0.5), (2, False)):
        rows = _Rows(None, ("step",))
        rows.new = _batch(0, first)
        rows.convert()
        rows.new = _batch(3, second)
        table = rows.convert()
        assert str(table.schema.field("x").type) == "double"
        assert table["x"].to_pylist() == [float(first)] * 3 + [float(second)] * 3
        assert table["step"].num_chunks == 2  # the earlier rows kept as converted (reconverted: one chunk)


def test_bool_batches_stay_bool() -> None:
    rows = _Rows(None, ("step",))
    for start, value in ((0, True), (3, False)):
        rows.new = _batch(start, value)
        table = rows.convert()
    assert str(table.schema.field("x").type) == "bool" and table["step"].num_chunks == 2
