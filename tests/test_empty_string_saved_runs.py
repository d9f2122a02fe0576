"""The empty name/path settings refused since a678c24b are refused where they are given (a new config, a resume's
keyword), not in a run saved before: its ``wandb_project: ''`` (W&B off, it trained) made ``canter.load``,
``canter eval`` and ``--resume`` of it fail with "'wandb_project' got an empty value; give a W&B project name",
which a resume cannot give."""
from __future__ import annotations

import json

import pytest

import canter
import canter.config
from tests.support import assert_one_line_error, run_cli

TINY = dict(max_steps=32, max_seconds=0.001, n_envs=1, n_steps=8, eval_episodes=0, tensorboard=False, quiet=True)


@pytest.fixture
def saved_before(tmp_path, monkeypatch):
    """A run as canter before 2026-11-28 saved it with wandb_project '' (stopped by its time budget)."""
    run_dir = tmp_path / "run"
    with monkeypatch.context() as m:  # the check a678c24b added, left out as it was then
        m.setattr(canter.config, "check_empty_strings", lambda values, names=True: values)
        canter.train("a2c", "CartPole-v1", run_dir=run_dir, wandb_project="", **TINY)
    assert json.loads((run_dir / "checkpoints" / "last.json").read_text())["config"]["wandb_project"] == ""
    return run_dir


def test_a_saved_empty_wandb_project_loads_evaluates_and_resumes(saved_before, capsys):
    assert canter.load(saved_before).run_config.wandb_project == ""
    code, _, err = run_cli(capsys, "eval", str(saved_before), "--episodes", "1")
    assert code == 0, err
    canter.resume(saved_before, max_seconds=None)
    assert json.loads((saved_before / "summary.json").read_text())["stop_reason"] == "max_steps"


def test_a_new_runs_empty_wandb_project_is_still_refused(tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", "a2c", "--env", "CartPole-v1", "--set", "wandb_project=", "--run-dir",
                           str(tmp_path / "run"))
    assert_one_line_error(code, err, "'wandb_project' got an empty value; give a W&B project name")
    assert not (tmp_path / "run").exists()


def test_a_resumes_empty_ray_address_is_refused_as_empty(saved_before):
    with pytest.raises(canter.CanterError, match=r"^'ray_address' got an empty value; give 'auto'"):
        canter.resume(saved_before, ray_address=" ")
