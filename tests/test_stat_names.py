"""A learn or after_update statistic named as one of updates.parquet's own columns is refused in one line: a
``{"step": ...}`` statistic replaced every row's step in updates.parquet, silently."""
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
