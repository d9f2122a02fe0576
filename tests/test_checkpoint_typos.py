"""A checkpoint path that does not exist is answered with the checkpoints that do, also where the folder's name is
mistyped or the run kept no step-N checkpoint (tests/test_checkpoint.py has the step numbers and run directories)."""
from __future__ import annotations

import pytest

from canter.checkpoint import find_checkpoint
from canter.errors import CanterError


def _checkpoints(tmp_path, *names):
    folder = tmp_path / "run" / "checkpoints"
    folder.mkdir(parents=True)
    for name in names:
        (folder / f"{name}.json").write_text("{}")
    return folder


def test_a_mistyped_checkpoints_folder_is_answered_with_its_checkpoints(tmp_path):
    """``canter eval RUN/checkpoint/best`` (no 's') said 'no such run directory or checkpoint' and named nothing."""
    folder = _checkpoints(tmp_path, "best", "last", "step-000001024")
    with pytest.raises(CanterError, match=rf"checkpoint: '.*checkpoint/best'; did you mean '{folder / 'best'}'\?$"):
        find_checkpoint(tmp_path / "run" / "checkpoint" / "best")
    with pytest.raises(CanterError, match=rf"did you mean '{folder / 'step-000001024'}'\?$"):
        find_checkpoint(tmp_path / "run" / "chekpoints" / "step-1024")


def test_a_step_checkpoint_of_a_run_that_kept_none_names_best_and_last(tmp_path):
    """A run whose checkpoint_every (50000) was past its steps has best and last only: 'RUN/checkpoints/step-1024'
    named neither."""
    folder = _checkpoints(tmp_path, "best", "last")
    with pytest.raises(CanterError, match=rf"did you mean '{folder / 'best'}' or '{folder / 'last'}'\?$"):
        find_checkpoint(folder / "step-1024")
    with pytest.raises(CanterError, match=r"checkpoint: '[^']*zzz'$"):  # a name like none of them: nothing
        find_checkpoint(folder / "zzz")


def test_a_dataset_beside_a_mistyped_path_is_not_suggested(tmp_path):
    """``canter eval data/cartpol`` suggested 'data/cartpole', a dataset, which eval then refuses."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "cartpole.json").write_text('{"kind": "canter-dataset"}')
    (data / "cartpole.safetensors").write_bytes(b"")
    (data / "cartpole-agent.json").write_text("{}")  # a checkpoint beside it is still named
    with pytest.raises(CanterError, match=rf"checkpoint: '[^']*cartpol'; did you mean '{data / 'cartpole-agent'}'\?$"):
        find_checkpoint(data / "cartpol")


def test_a_mistyped_run_directory_followed_by_a_checkpoint_name_names_the_run(tmp_path):
    """``canter eval runs/ppo-c/best`` (the run directory's name mistyped) suggested nothing."""
    folder = _checkpoints(tmp_path, "best")
    with pytest.raises(CanterError, match=rf"did you mean '{folder / 'best'}'\?$"):
        find_checkpoint(tmp_path / "rnu" / "best")
    with pytest.raises(CanterError, match=rf"did you mean '{tmp_path / 'run'}'\?$"):  # no 'last': the run itself
        find_checkpoint(tmp_path / "rnu" / "last")


def test_a_mistyped_run_directory_in_a_full_checkpoint_path_names_the_run(tmp_path):
    """``canter eval runs/ppo-c/checkpoints/best`` (the path a run prints, its run directory's name mistyped)
    suggested nothing, where ``runs/ppo-c/best`` named the run's checkpoint."""
    folder = _checkpoints(tmp_path, "best")
    with pytest.raises(CanterError, match=rf"did you mean '{folder / 'best'}'\?$"):
        find_checkpoint(tmp_path / "rnu" / "checkpoints" / "best")
    with pytest.raises(CanterError, match=rf"did you mean '{tmp_path / 'run'}'\?$"):  # no 'last': the run itself
        find_checkpoint(tmp_path / "rnu" / "checkpoints" / "last")


def test_a_mistyped_run_directory_and_checkpoint_name_names_the_closest_checkpoint(tmp_path):
    """Two typos in one path: ``rnu/checkpoints/bset`` named the run directory only, ``rnu/chekpoints/best`` (the
    run's and its checkpoints folder's names mistyped) named nothing; now the checkpoint most like it in the run
    directories most like it."""
    folder = _checkpoints(tmp_path, "best", "last", "step-000001024")
    with pytest.raises(CanterError, match=rf"did you mean '{folder / 'best'}'\?$"):
        find_checkpoint(tmp_path / "rnu" / "chekpoints" / "best")
    with pytest.raises(CanterError, match=rf"did you mean '{folder / 'last'}'\?$"):
        find_checkpoint(tmp_path / "rnu" / "checkpoints" / "lats")
    with pytest.raises(CanterError, match=rf"did you mean '{folder / 'last'}'\?$"):
        find_checkpoint(tmp_path / "rnu" / "lats")
    with pytest.raises(CanterError, match=rf"did you mean '{folder / 'step-000001024'}'\?$"):
        find_checkpoint(tmp_path / "rnu" / "chekpoints" / "step-1024")
    with pytest.raises(CanterError, match=rf"did you mean '{tmp_path / 'run'}'\?$"):  # like none of them: the run
        find_checkpoint(tmp_path / "rnu" / "checkpoints" / "zzz")
