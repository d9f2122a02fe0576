"""What a learn or after_update statistic may be: one named as one of updates.parquet's own columns is refused in one
line (a ``{"step": ...}`` statistic replaced every row's step in updates.parquet, silently); NumPy numbers are taken as
Python's."""
from __future__ import annotations

import pytest

from canter.callbacks import _check_logged
from canter.errors import CanterError
from canter.trainers.records import logged_numbers


@pytest.mark.parametrize("key", ["step", "wall_time", "steps_per_second"])
def test_learn_statistic_named_as_an_own_column_is_refused(key: str) -> None:
    with pytest.raises(CanterError, match=rf"algorithm 'ppo' reported losses\['{key}'\].*another name, e.g. 'n_{key}'"):
        logged_numbers({"loss": 1.0, key: 3.0}, "ppo")


def test_hook_statistic_named_as_an_own_column_is_refused() -> None:
    def my_hook(trainer: object, losses: dict) -> None:  # noqa: ARG001
        pass

    with pytest.raises(CanterError, match=r"after_update hook .*my_hook reported losses\['step'\]"):
        _check_logged(my_hook, {"step": 5})


def test_other_names_pass() -> None:
    assert logged_numbers({"n_step": 1.0, "policy/step": 2.0}, "ppo") == {"n_step": 1.0, "policy/step": 2.0}
    _check_logged(print, {"n_step": 1, "policy/wall_time": 2.0})


def test_numpy_statistics_are_python_numbers(tmp_path: object) -> None:
    """A learn reporting NumPy numbers: a np.bool_ among floats ended the run with pyarrow's ArrowInvalid writing
    updates.parquet, and a np.float32 NaN was no float to the divergence guard's loss check."""
    import numpy as np
    import pyarrow.parquet as pq

    from canter.logging.history import HistoryLogger
    from canter.trainers.records import TrainRecord

    losses = logged_numbers({"stopped": np.True_, "kl": np.float32(0.5), "n": np.int64(3)}, "ppo")
    assert [type(v) for v in losses.values()] == [bool, float, int]
    logger = HistoryLogger(tmp_path)  # type: ignore[arg-type]
    for step, value in ((1, 0.5), (2, np.True_)):
        logger.log(TrainRecord(step=step, iteration=step, wall_time=1.0, steps_per_second=1.0,
                               losses=logged_numbers({"x": value}, "ppo")))
    logger.close()
    assert pq.read_table(tmp_path / "updates.parquet")["x"].to_pylist() == [0.5, 1.0]  # type: ignore[operator]


def test_numpy_arrays_are_taken_as_tensors_are(tmp_path: object) -> None:
    """A learn reporting a 0-d NumPy array (np.array(0.5)) ended the run with pyarrow's ArrowInvalid writing
    updates.parquet; one of several values was written as a list column where a tensor's is refused in one line."""
    import numpy as np
    import pyarrow.parquet as pq

    from canter.logging.history import HistoryLogger
    from canter.trainers.records import TrainRecord

    losses = logged_numbers({"kl": np.array(0.5), "stopped": np.array(True)}, "ppo")
    assert losses == {"kl": 0.5, "stopped": True} and [type(v) for v in losses.values()] == [float, bool]
    logger = HistoryLogger(tmp_path)  # type: ignore[arg-type]
    logger.log(TrainRecord(step=1, iteration=1, wall_time=1.0, steps_per_second=1.0, losses=losses))
    logger.close()
    assert pq.read_table(tmp_path / "updates.parquet")["kl"].to_pylist() == [0.5]  # type: ignore[operator]
    with pytest.raises(CanterError, match=r"algorithm 'ppo' reported losses\['q'\] as a NumPy array of shape \(2,\)"):
        logged_numbers({"q": np.array([0.5, 1.0])}, "ppo")


@pytest.mark.parametrize("value", ["abc", None, [1.0]])
def test_a_learn_statistic_that_is_no_number_is_refused(value: object) -> None:
    """A learn reporting a string or None passed logged_numbers (an after_update hook's is refused) and the run ended
    in TensorBoard's float() traceback (ValueError / TypeError) at the first record."""
    with pytest.raises(CanterError, match=r"algorithm 'ppo' reported losses\['note'\] = .*: learn\(\) reports numbers"):
        logged_numbers({"loss": 1.0, "note": value}, "ppo")
