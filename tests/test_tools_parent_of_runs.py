"""``canter plot runs`` / ``canter report runs/benchmark-classic/runs``: a folder that holds run directories, given in
their place. The error said only "is not a canter run directory (no config.yaml)"; it now says that it holds run
directories and names one, so the command to type is plain (``canter plot runs/*``)."""
from __future__ import annotations

import pytest

from canter.errors import CanterError
from canter.tools.rundata import load_run


def test_a_folder_of_runs_names_the_runs_it_holds(tmp_path):
    for name in ("ppo-a", "ppo-b"):
        (tmp_path / "runs" / name).mkdir(parents=True)
        (tmp_path / "runs" / name / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\n")
    (tmp_path / "runs" / "notes").mkdir()
    with pytest.raises(CanterError, match=r"'.*runs' is not a canter run directory \(no config.yaml\); it holds 2 run "
                                          r"directories, such as '.*ppo-a': pass a run directory \(canter plot takes "
                                          r"several: .*runs/\*\)"):
        load_run(tmp_path / "runs")


def test_an_empty_folder_keeps_the_plain_message(tmp_path):
    with pytest.raises(CanterError, match=r"is not a canter run directory \(no config.yaml\)$"):
        load_run(tmp_path)


def test_eval_and_play_given_a_folder_of_runs_name_one(tmp_path):
    """find_checkpoint (canter eval, play, collect, canter.load) said only 'is not a canter run directory'."""
    from canter.checkpoint import find_checkpoint

    (tmp_path / "runs" / "ppo-a").mkdir(parents=True)
    (tmp_path / "runs" / "ppo-a" / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\n")
    with pytest.raises(CanterError, match=r"'.*runs' is not a canter run directory \(no config.yaml or checkpoints/\); "
                                          r"it holds 1 run directory, such as '.*ppo-a': pass one of them$"):
        find_checkpoint(tmp_path / "runs")
